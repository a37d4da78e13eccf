"""The task plan as one message that is edited as steps progress: posted once, then updated in place.

Slack through the real slack_sdk client against the fake Slack Web API (chat.postMessage, then
chat.update of the same ts); Discord through the real discord.py client against the fake REST and
gateway (a message sent as the bot, then a PATCH of the same message id); the console reprints.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bot.console import ConsolePort
from bot.discord_bot.delivery import MESSAGE_LIMIT
from bot.plan_message import fit_plan
from bot.port import PlatformPorts
from bot.slack.app import make_web_client
from bot.slack.port import PLAN_CHARS, SlackPort
from bot.slack.text import escape_for_slack, unescape_from_slack
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import CHANNEL
from tests.slack_harness import BOT_TOKEN, KEY, SlackHarness

PLANNED = "Plan: launch the beta (0 of 2 done)\n1. [ ] Draft the post (Nova)\n2. [ ] Review it (Sage)"
HALFWAY = "Plan: launch the beta (1 of 2 done)\n1. [x] Draft the post (Nova): drafted\n2. [~] Review it (Sage)"
DONE = "Plan: launch the beta (2 of 2 done)\n1. [x] Draft the post (Nova): drafted\n2. [x] Review it (Sage): fine"


def long_plan(steps: int) -> str:
    lines = [f"{n}. [ ] Step {n}: " + "write a paragraph about the launch " * 4 for n in range(1, steps + 1)]
    return "\n".join(["Plan: a very long task (0 of %d done)" % steps, *lines])


# -- fitting a plan to a message ------------------------------------------------------------------


def test_a_plan_that_fits_is_shown_whole() -> None:
    assert fit_plan(PLANNED, 2000) == PLANNED


def test_a_long_plan_keeps_its_header_and_says_how_many_lines_were_left_out() -> None:
    shown = fit_plan(long_plan(100), 2000)

    assert len(shown) <= 2000
    assert shown.startswith("Plan: a very long task (0 of 100 done)\n1. [ ] Step 1: ")
    kept = shown.splitlines()
    assert kept[-1] == f"… {101 - (len(kept) - 1)} more lines not shown (the plan is too long for one message)"
    assert all(line.startswith(f"{n}. ") for n, line in enumerate(kept[1:-1], start=1))


def test_an_overlong_header_is_clipped_not_lost() -> None:
    shown = fit_plan("Plan: " + "x" * 5000 + "\n1. [ ] the one step", 300)

    assert len(shown) <= 300
    header, marker = shown.splitlines()
    assert header.startswith("Plan: xxx") and header.endswith("…")
    assert marker.startswith("… 1 more line not shown")


def test_escaping_counts_against_the_limit() -> None:
    shown = fit_plan(
        "Plan: R&D\n" + "\n".join(f"{n}. [ ] compare A & B & C" for n in range(200)), 500, escape_for_slack
    )

    assert len(shown) <= 500
    assert shown.startswith("Plan: R&amp;D\n0. [ ] compare A &amp; B &amp; C")


# -- Slack ------------------------------------------------------------------------------------------


@pytest.fixture
async def slack_port(fake_slack: FakeSlackApi) -> SlackPort:
    return SlackPort(make_web_client(BOT_TOKEN, fake_slack.api_url))


async def test_slack_posts_the_plan_once_then_updates_the_same_message(
    fake_slack: FakeSlackApi, slack_port: SlackPort
) -> None:
    shown_as = await slack_port.show_plan(KEY, PLANNED, None, None)
    assert await slack_port.show_plan(KEY, HALFWAY, None, shown_as) == shown_as
    assert await slack_port.show_plan(KEY, DONE, None, shown_as) == shown_as

    [post] = fake_slack.calls_to("chat.postMessage")
    assert post.args["channel"] == CHANNEL and post.args["username"] == "Roundtable"
    assert post.args["text"] == PLANNED and "thread_ts" not in post.args
    ts = post.answer["ts"]
    updates = fake_slack.calls_to("chat.update")
    assert [(u.args["channel"], u.args["ts"], u.args["text"]) for u in updates] == [
        (CHANNEL, ts, HALFWAY),
        (CHANNEL, ts, DONE),
    ]
    assert fake_slack.messages[(CHANNEL, ts)]["text"] == DONE  # what the channel shows now


async def test_slack_plan_of_a_thread_conversation_is_posted_in_the_thread(
    fake_slack: FakeSlackApi, slack_port: SlackPort
) -> None:
    await slack_port.show_plan(f"{KEY}:1700000000.000100", PLANNED, None, None)

    [post] = fake_slack.calls_to("chat.postMessage")
    assert post.args["thread_ts"] == "1700000000.000100"


async def test_slack_plan_is_escaped_and_clipped_to_one_message(
    fake_slack: FakeSlackApi, slack_port: SlackPort
) -> None:
    plan = "Plan: tell <!everyone> & @here (0 of 300 done)\n" + long_plan(300).split("\n", 1)[1]
    shown_as = await slack_port.show_plan(KEY, plan, None, None)
    await slack_port.show_plan(KEY, plan.replace("[ ]", "[x]", 1), None, shown_as)

    [post] = fake_slack.calls_to("chat.postMessage")
    [update] = fake_slack.calls_to("chat.update")
    for text in (post.args["text"], update.args["text"]):
        assert len(text) <= PLAN_CHARS
        assert text.startswith("Plan: tell &lt;!everyone&gt; &amp; @\u200bhere (0 of 300 done)\n1. [")
        assert "<!" not in text and "more lines not shown" in text.splitlines()[-1]


async def test_slack_plan_whose_message_was_deleted_is_posted_again(
    fake_slack: FakeSlackApi, slack_port: SlackPort
) -> None:
    first = await slack_port.show_plan(KEY, PLANNED, None, None)
    fake_slack.fail_next("chat.update", "message_not_found")
    second = await slack_port.show_plan(KEY, HALFWAY, None, first)
    assert await slack_port.show_plan(KEY, DONE, None, second) == second

    old, new = fake_slack.calls_to("chat.postMessage")
    assert second != first and new.args["text"] == HALFWAY
    assert [u.args["ts"] for u in fake_slack.calls_to("chat.update")] == [old.answer["ts"], new.answer["ts"]]
    assert fake_slack.messages[(CHANNEL, new.answer["ts"])]["text"] == DONE


async def test_slack_plan_update_that_fails_keeps_the_message_and_logs_no_secret(
    fake_slack: FakeSlackApi, slack_port: SlackPort, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    first = await slack_port.show_plan(KEY, PLANNED, None, None)
    fake_slack.fail_next("chat.update", "internal_error")
    assert await slack_port.show_plan(KEY, HALFWAY, None, first) == first  # no second copy of the plan
    assert await slack_port.show_plan(KEY, DONE, None, first) == first
    fake_slack.fail_next("chat.postMessage", "not_in_channel")
    assert await slack_port.show_plan(KEY, PLANNED, None, None) is None

    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    assert f"chat.update of the plan in {KEY} failed: internal_error" in caplog.text
    assert f"chat.postMessage in {KEY} failed: not_in_channel" in caplog.text
    assert BOT_TOKEN not in caplog.text


# -- Discord ----------------------------------------------------------------------------------------

DISCORD_KEY = f"discord:{p.TEXT_CHANNEL_ID}"
MESSAGES = rf"/channels/{p.TEXT_CHANNEL_ID}/messages"


@pytest.fixture
async def discord_port(fake: FakeDiscord, open_bot: Callable[..., Any]) -> AsyncIterator[Any]:
    async with open_bot() as bot:
        yield bot.app.outbox.inner  # the Discord port itself, behind the outbox


async def test_discord_sends_the_plan_once_then_edits_the_same_message(fake: FakeDiscord, discord_port: Any) -> None:
    shown_as = await discord_port.show_plan(DISCORD_KEY, PLANNED, None, None)
    assert await discord_port.show_plan(DISCORD_KEY, HALFWAY, None, shown_as) == shown_as
    assert await discord_port.show_plan(DISCORD_KEY, DONE, None, shown_as) == shown_as

    [sent] = fake.find_calls("POST", MESSAGES)
    assert sent.json["content"] == PLANNED and sent.json["allowed_mentions"] == {"parse": []}
    [message_id] = fake.messages
    assert shown_as == f"{p.TEXT_CHANNEL_ID}:{message_id}"
    edits = fake.find_calls("PATCH", rf"{MESSAGES}/{message_id}")
    assert [e.json["content"] for e in edits] == [HALFWAY, DONE]
    assert all(e.json["allowed_mentions"] == {"parse": []} for e in edits)
    assert fake.messages[message_id]["content"] == DONE  # what the channel shows now
    assert fake.messages[message_id]["author"]["id"] == str(p.BOT_USER_ID)  # the bot's own message
    assert not fake.webhook_executes()


async def test_discord_plan_whose_message_was_deleted_is_sent_again(fake: FakeDiscord, discord_port: Any) -> None:
    first = await discord_port.show_plan(DISCORD_KEY, PLANNED, None, None)
    [deleted] = list(fake.messages)
    del fake.messages[deleted]  # someone deleted the plan message
    second = await discord_port.show_plan(DISCORD_KEY, HALFWAY, None, first)
    assert await discord_port.show_plan(DISCORD_KEY, DONE, None, second) == second

    [replacement] = list(fake.messages)
    assert second != first and second.endswith(f":{replacement}")
    assert len(fake.find_calls("POST", MESSAGES)) == 2
    assert fake.messages[replacement]["content"] == DONE


async def test_discord_long_plan_fits_one_message_with_its_header(fake: FakeDiscord, discord_port: Any) -> None:
    plan = long_plan(60)
    shown_as = await discord_port.show_plan(DISCORD_KEY, plan, None, None)
    await discord_port.show_plan(DISCORD_KEY, plan.replace("(0 of 60", "(1 of 60"), None, shown_as)

    [message] = fake.messages.values()  # the fake refuses content over 2,000 characters
    assert len(message["content"]) <= MESSAGE_LIMIT
    assert message["content"].startswith("Plan: a very long task (1 of 60 done)\n1. [ ] Step 1")
    assert "more lines not shown" in message["content"].splitlines()[-1]


# -- console ----------------------------------------------------------------------------------------


async def test_console_prints_the_plan_then_reprints_it_marked_as_updated() -> None:
    lines: list[str] = []
    port = ConsolePort(lines.append)

    shown_as = await port.show_plan("console:general", PLANNED, None, None)
    assert await port.show_plan("console:general", DONE, None, shown_as) == shown_as

    assert lines == [f"[plan]\n{PLANNED}", f"[plan updated]\n{DONE}"]


async def test_a_process_serving_several_platforms_shows_the_plan_on_the_channels_own(
    fake_slack: FakeSlackApi, slack_port: SlackPort
) -> None:
    lines: list[str] = []
    ports = PlatformPorts({"slack": slack_port, "console": ConsolePort(lines.append)})

    on_slack = await ports.show_plan(KEY, PLANNED, None, None)
    await ports.show_plan(KEY, DONE, None, on_slack)
    await ports.show_plan("console:general", PLANNED, None, None)

    assert [c.args["text"] for c in fake_slack.calls_to("chat.postMessage")] == [PLANNED]
    assert [c.args["text"] for c in fake_slack.calls_to("chat.update")] == [DONE]
    assert lines == [f"[plan]\n{PLANNED}"]


# -- a task typed on each platform --------------------------------------------------------------------
# The scripted planner splits the request at ";" and assigns by capability: Sage researches, Nova writes.

TASK = "Research three venues; write the invitation"
PLANNED_TASK = [
    "Task #1: Research three venues (running)",
    "[ ] 1. Research three venues — Sage",
    "[ ] 2. write the invitation — Nova (after 1)",
]


def assert_shown_as_the_task_went(texts: list[str]) -> None:
    """Planning, planned, each step under way then done (with its result), and finished."""
    assert texts[0] == "Task #1 (planning)"
    assert texts[1] == "\n".join(PLANNED_TASK)
    marks = [[line[:3] for line in text.splitlines()[1:3]] for text in texts[1:]]
    assert marks == [
        ["[ ]", "[ ]"],
        ["[>]", "[ ]"],
        ["[x]", "[ ]"],
        ["[x]", "[>]"],
        ["[x]", "[x]"],
        ["[x]", "[x]"],
    ]
    final = texts[-1].splitlines()
    assert final[0] == "Task #1: Research three venues (completed)" and final[-1] == "Done: all 2 steps completed."
    assert final[1].startswith("[x] 1. Research three venues — Sage: ")


async def test_a_slack_task_shows_one_plan_message_updated_in_place_as_steps_complete(slack: SlackHarness) -> None:
    assert await slack.command("/task", TASK) == (200, "")

    [taken] = slack.replies_to_command()
    assert taken["response_type"] == "ephemeral" and taken["text"].startswith("Task #1 taken")
    [plan] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args["text"] == "Task #1 (planning)"]
    assert plan.args["username"] == "Roundtable" and plan.args["channel"] == CHANNEL
    ts = plan.answer["ts"]
    updates = slack.fake.calls_to("chat.update")
    assert {(u.args["channel"], u.args["ts"]) for u in updates} == {(CHANNEL, ts)}
    assert_shown_as_the_task_went([unescape_from_slack(c.args["text"]) for c in [plan, *updates]])
    assert slack.fake.messages[(CHANNEL, ts)]["text"] == updates[-1].args["text"]
    # The steps are the personas' own posts, and the plan was edited between them.
    order = [
        ("update", c.args["text"]) if c.method == "chat.update" else (c.args.get("username"), c.args["text"])
        for c in slack.fake.calls
        if c.method in ("chat.update", "chat.postMessage") and c is not plan
    ]
    names = [who for who, _ in order]
    assert [who for who in names if who != "update"] == ["Sage", "Nova", "Nova"]  # then Nova's answer, not "Done"
    between = order[names.index("Sage") + 1 : names.index("Nova")]
    assert any(text.splitlines()[1].startswith("[x] 1.") for who, text in between if who == "update")


async def test_a_discord_task_shows_one_plan_message_edited_in_place_as_steps_complete(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot() as bot:
        asked = await fake.send_slash_command("task", {"text": TASK}, permissions=p.MEMBER_PERMISSIONS)
        [taken] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
        await settle(bot)

    assert taken.json["flags"] == 64 and taken.json["content"].startswith("Task #1 taken")
    [plan] = fake.find_calls("POST", MESSAGES, lambda c: c.json["content"] == "Task #1 (planning)")
    [message_id] = [i for i, m in fake.messages.items() if m["content"].startswith("Task #1: Research")]
    edits = fake.find_calls("PATCH", rf"{MESSAGES}/{message_id}")
    assert all(c.json["allowed_mentions"] == {"parse": []} for c in [plan, *edits])
    assert_shown_as_the_task_went([plan.json["content"], *[e.json["content"] for e in edits]])
    assert fake.messages[message_id]["content"] == edits[-1].json["content"]
    # The steps are the personas' own posts, through the channel webhook, and the plan was edited between them.
    order = [
        ("edit", c.json["content"]) if c.method == "PATCH" else (c.json["username"], c.json["content"])
        for c in fake.calls
        if c in edits or c in fake.webhook_executes()
    ]
    names = [who for who, _ in order]
    assert [who for who in names if who != "edit"] == ["Sage", "Nova", "Nova"]  # the steps, then Nova's answer
    between = order[names.index("Sage") + 1 : names.index("Nova")]
    assert any(text.splitlines()[1].startswith("[x] 1.") for who, text in between if who == "edit")
