"""The Slack adapter's pure parts, the port on its own, the runner and the manifest."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import ConfigError
from bot.platforms import run_platforms
from bot.request_places import Place, RequestPlaces
from bot.slack.action_targets import ActionFailed, target_of
from bot.slack.app import make_web_client
from bot.slack.approval_blocks import decision_blocks, feedback_modal, outcome_text, request_blocks
from bot.slack.approvals import ButtonClick, FeedbackSubmission, button_click, feedback_submission
from bot.slack.commands import SLASH_COMMANDS
from bot.slack.inbound import inbound_from_event
from bot.slack.keys import channel_id_of, channel_key, channel_key_of, thread_ts_of
from bot.slack.port import SlackPort, persona_identity, request_location
from bot.slack.text import (
    CHUNK_CHARS,
    ZERO_WIDTH_SPACE,
    escape_clipped,
    escape_for_slack,
    split_for_slack,
    unescape_from_slack,
)
from graph.actions import ActionCall
from personas import load_personas
from storage import approvals, channels
from storage.database import open_database
from storage.records import Approval, ApprovalStatus
from tests.conftest import REPO, write_config
from tests.fakes.slack_api import FakeSlackApi

PERSONAS = load_personas(REPO / "personas")


def body(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "channel": "C1", "user": "U1", "text": "hello", "ts": "1.000100"}
    return {"team_id": "T1", "event_id": "Ev1", "event": {**base, **event}}


# -- text ------------------------------------------------------------------------------------------


def test_escape_leaves_no_control_sequence() -> None:
    assert escape_for_slack("a <!here> & <@U1> > b") == "a &lt;!here&gt; &amp; &lt;@U1&gt; &gt; b"
    assert escape_for_slack("hey @channel and @Everyone, mail@here.com") == (
        "hey @\u200bchannel and @\u200bEveryone, mail@\u200bhere.com"
    )


def test_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    paragraph = "word " * 500  # 2,500 characters
    pieces = split_for_slack(f"{paragraph}\n\n{paragraph}")
    assert [len(p) for p in pieces] == [len(paragraph.strip())] * 2

    no_breaks = "x" * (CHUNK_CHARS * 2 + 10)
    assert [len(p) for p in split_for_slack(no_breaks)] == [CHUNK_CHARS, CHUNK_CHARS, 10]
    assert split_for_slack("  \n ") == []
    assert split_for_slack("short") == ["short"]


@pytest.mark.parametrize("text", ["a & b < c " * 400, "x" * 5000, "@here " * 900, "&" * 3001])
def test_clipped_text_stays_within_its_limit_and_splits_no_entity(text: str) -> None:
    clipped = escape_clipped(text, 1000)
    body = clipped.removesuffix("…")
    assert 990 <= len(clipped) <= 1000 and body != clipped  # cut as late as fits, and marked
    assert re.fullmatch(r"(?:[^&<>]|&amp;|&lt;|&gt;)*", body)  # every entity whole
    assert text.startswith(unescape_from_slack(body.replace(ZERO_WIDTH_SPACE, "")))
    assert escape_clipped("short & sweet", 1000) == "short &amp; sweet"


def test_split_keeps_every_word() -> None:
    text = "\n".join(f"line {n} " + "y" * (n % 90) for n in range(800))
    pieces = split_for_slack(text)
    assert all(len(p) <= CHUNK_CHARS for p in pieces) and len(pieces) > 1
    assert "".join(pieces).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")


# -- inbound ---------------------------------------------------------------------------------------


def test_channel_message_becomes_inbound() -> None:
    inbound = inbound_from_event(body(text="Sage &amp; Nova: a &lt; b", thread_ts="0.5"), "UBOT")
    assert inbound is not None
    assert (inbound.channel_key, inbound.author_id, inbound.thread) == ("slack:T1:C1:0.5", "U1", "0.5")
    assert inbound.text == "Sage & Nova: a < b"
    assert inbound.event_id == "slack:T1:C1:1.000100"

    parent = inbound_from_event(body(thread_ts="1.000100"), "UBOT")  # a thread's parent is a top-level message
    assert parent is not None and (parent.channel_key, parent.thread) == ("slack:T1:C1", None)


@pytest.mark.parametrize("subtype", ["thread_broadcast", "file_share"])
def test_human_subtypes_are_taken(subtype: str) -> None:
    assert inbound_from_event(body(subtype=subtype), "UBOT") is not None


@pytest.mark.parametrize(
    "event",
    [
        {"bot_id": "B1"},
        {"subtype": "bot_message"},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "channel_join"},
        {"user": "UBOT"},
        {"user": None},
        {"text": "<@UBOT>"},
        {"type": "reaction_added"},
    ],
)
def test_not_answered(event: dict[str, Any]) -> None:
    assert inbound_from_event(body(**event), "UBOT") is None


def test_bot_mention_is_stripped_other_mentions_kept() -> None:
    inbound = inbound_from_event(body(type="app_mention", text="<@UBOT|roundtable>  Sage, ask <@U2>"), "UBOT")
    assert inbound is not None and inbound.text == "Sage, ask <@U2>"


def test_channel_keys_round_trip() -> None:
    assert channel_id_of(channel_key("T1", "C9")) == "C9" and thread_ts_of(channel_key("T1", "C9")) is None
    thread = channel_key("T1", "C9", "1.5")
    assert (thread, channel_id_of(thread), thread_ts_of(thread)) == ("slack:T1:C9:1.5", "C9", "1.5")
    assert channel_key_of(thread) == channel_key_of("slack:T1:C9") == "slack:T1:C9"
    assert channel_id_of("discord:123") is None and channel_id_of("slack:T1") is None
    assert thread_ts_of("discord:123") is None and channel_key_of("discord:123") == "discord:123"


# -- port ------------------------------------------------------------------------------------------


def test_persona_identity() -> None:
    assert persona_identity(PERSONAS["sage"]) == {"username": "Sage", "icon_emoji": ":owl:"}
    assert persona_identity(PERSONAS["rex"]) == {"username": "Rex", "icon_emoji": ":t-rex:"}
    assert persona_identity(PERSONAS["pixel"]) == {"username": "Pixel", "icon_emoji": ":art:"}  # avatar "🎨"
    assert persona_identity(PERSONAS["nova"])["icon_url"].startswith("https://")


async def test_long_reply_is_posted_in_pieces_in_the_same_thread() -> None:
    async with FakeSlackApi() as fake:
        port = SlackPort(make_web_client("xoxb-unit", fake.api_url))
        await port.post("slack:T1:C1", PERSONAS["sage"], "\n".join(["z" * 1000] * 7), "9.9")
        await port.notice("slack:T1:C1", "Scene set: <!here>", None)
        await port.trace("slack:T1:C1", "[moderator] dropped")

    posts = fake.delivered_posts()
    assert [len(p["text"]) for p in posts[:-1]] == [2001, 2001, 2001, 1000]
    assert {(p["thread_ts"], p["username"]) for p in posts[:-1]} == {("9.9", "Sage")}
    assert posts[-1] == {
        "channel": "C1",
        "text": "Scene set: &lt;!here&gt;",
        "unfurl_links": False,
        "username": "Roundtable",
    }


async def test_a_threads_conversation_is_answered_in_the_thread() -> None:
    async with FakeSlackApi() as fake:
        port = SlackPort(make_web_client("xoxb-unit", fake.api_url), approvers_for=lambda key: {"U9"})
        await port.post("slack:T1:C1:5.5", PERSONAS["sage"], "In the thread.", None)
        await port.notice("slack:T1:C1:5.5", "Moderation is off.", None)
        await port.notify_approvers("slack:T1:C1:5.5", "three failures")

    assert [(p["channel"], p["thread_ts"]) for p in fake.delivered_posts()] == [("C1", "5.5")] * 3


def test_a_slack_thread_has_its_channels_approvers(make_config) -> None:
    settings = make_config(
        {"approvals": {"approvers": {"slack": ["U1"]}, "channel_approvers": {"slack:T1:C1": ["U9"]}}}
    )
    approvals_section = settings.settings.approvals
    assert (
        approvals_section.approvers_for("slack:T1:C1:5.5") == approvals_section.approvers_for("slack:T1:C1") == {"U9"}
    )
    assert approvals_section.approvers_for("slack:T1:C2:5.5") == {"U1"}
    assert approvals_section.is_approver("slack:T1:C1:5.5", "U9", "T1") and not approvals_section.is_approver(
        "slack:T1:C1:5.5", "U1", "T1"
    )


# -- runner ----------------------------------------------------------------------------------------


async def test_runner_needs_a_token_and_a_way_in(make_config) -> None:
    config = make_config()
    assert await run_platforms(config, {}) is False  # no platform: the caller opens the console
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        await run_platforms(config, {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": ""})


async def test_runner_serves_socket_mode_until_cancelled(make_config) -> None:
    async with FakeSlackApi() as fake:
        config = make_config({"slack": {"api_base_url": fake.api_url}})
        running = asyncio.create_task(run_platforms(config, {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}))
        await fake.wait_until(lambda: fake.socket_connections == 1)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await fake.wait_until(lambda: fake.socket_closes == 1)


# -- manifest --------------------------------------------------------------------------------------


def test_manifest() -> None:
    manifest = yaml.safe_load(Path(REPO / "manifest.yml").read_text(encoding="utf-8"))
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True  # the approvers' direct messages
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(
        [
            "chat:write",
            "chat:write.customize",
            "app_mentions:read",
            "channels:history",
            "groups:history",
            "im:history",
            "commands",
            "users:read",
            "reactions:write",
            "im:write",  # conversations.open: the approvers' direct messages
            "channels:read",  # conversations.list: [slack] approvals_channel given by name
            "groups:read",
            "reactions:read",  # reaction_added and reaction_removed: 👍 and 👎 on personas' posts
        ]
    )
    settings = manifest["settings"]
    assert sorted(settings["event_subscriptions"]["bot_events"]) == sorted(
        ["message.channels", "message.groups", "message.im", "app_mention", "reaction_added", "reaction_removed"]
    )
    commands = {c["command"]: c["url"] for c in manifest["features"]["slash_commands"]}
    assert set(commands) == {
        "/moderate",
        "/stop",
        "/next",
        "/persona",
        "/approvals",
        "/trust",
        "/task",
        "/outbox",
        "/mailbox",
        "/memory",
        "/usage",
        "/tools",
        "/roundtable",
    }
    assert set(commands) == set(SLASH_COMMANDS)
    urls = {
        *commands.values(),
        settings["event_subscriptions"]["request_url"],
        settings["interactivity"]["request_url"],
    }
    assert urls == {"https://example.com/slack/events"}
    assert settings["interactivity"]["is_enabled"] is True and settings["socket_mode_enabled"] is False


# -- approvals: blocks, payloads, targets ----------------------------------------------------------


def approval(**changes: Any) -> Approval:
    base: dict[str, Any] = dict(
        id=7,
        batch="b",
        call_id="c",
        channel_key="slack:T1:C1",
        thread="5.5",
        persona_id="nova",
        action="publish_post",
        args={"channel": "news", "text": "We launched!"},
        status=ApprovalStatus.PENDING,
        requested_at=1_700_000_000.0,
        expires_at=1_700_001_800.0,
        decided_by=None,
        decided_at=None,
        comment=None,
        incident=False,
        result=None,
    )
    return Approval(**{**base, **changes})


def test_request_blocks_escape_and_clip_what_the_persona_wrote() -> None:
    wants = approval(args={"channel": "<!channel>", "text": "@here " + "& " * 5000})
    blocks = request_blocks(wants, PERSONAS["nova"], name_the_channel=False)
    arguments = blocks[1]["text"]["text"]
    assert len(arguments) <= 3000 and arguments.startswith("*channel:* &lt;!channel&gt;\n*text:* @\u200bhere &amp;")
    assert "<" not in json.dumps(blocks[:2]) and "<#C1>" not in json.dumps(blocks)
    assert request_blocks(wants, PERSONAS["nova"], name_the_channel=True)[0]["elements"][1]["text"].endswith(
        " in <#C1>"
    )


@pytest.mark.parametrize(
    ("persona", "icon"),
    [("sage", [{"type": "mrkdwn", "text": ":owl:"}]), ("pixel", [{"type": "mrkdwn", "text": "🎨"}])],
)
def test_an_emoji_avatar_is_shown_as_text(persona: str, icon: list[dict[str, str]]) -> None:
    [context, *_] = request_blocks(approval(persona_id=persona), PERSONAS[persona], name_the_channel=False)
    assert context["elements"][:-1] == icon


def test_outcomes() -> None:
    decided = {"decided_by": "Bea", "decided_at": 1_700_000_060.0}
    executed = approval(status=ApprovalStatus.EXECUTED, result="posted in #news", **decided)
    assert (
        outcome_text(executed, "<@U1>")
        == "Approved by <@U1> at <!date^1700000060^{time}|22:14 UTC>, executed: posted in #news"
    )
    failed = approval(
        status=ApprovalStatus.FAILED, result="failed: Slack did not deliver it (not_in_channel)", **decided
    )
    assert outcome_text(failed, "<@U1>").endswith(", but it failed: Slack did not deliver it (not_in_channel)")
    rejected = approval(status=ApprovalStatus.REJECTED, comment="<!here> too salesy", **decided)
    assert outcome_text(rejected, "Bea") == "Rejected by Bea: &lt;!here&gt; too salesy"
    assert (
        outcome_text(approval(status=ApprovalStatus.REJECTED, **decided), "Bea") == "Rejected by Bea: no feedback given"
    )
    assert outcome_text(approval(status=ApprovalStatus.EXPIRED), "nobody") == "Expired: nobody decided in time."
    blocks = decision_blocks(executed, PERSONAS["nova"], "done", name_the_channel=False)
    assert [b["type"] for b in blocks] == ["context", "section", "section"] and blocks[-1]["text"]["text"] == "done"


def click_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "trigger_id": "t.1",
        "channel": {"id": "C1"},
        "container": {"type": "message", "channel_id": "C1", "message_ts": "9.9", "thread_ts": "5.5"},
        "actions": [{"action_id": "approval_approve", "value": "7"}],
    }
    return {**body, **changes}


def test_button_click_payloads() -> None:
    assert button_click(click_body()) == ButtonClick(7, "U1", "C1", "5.5", "t.1")
    assert button_click(click_body(channel=None, container={"channel_id": "C2"}, trigger_id=None)) == ButtonClick(
        7, "U1", "C2", None, None
    )
    for broken in (
        {"user": None},
        {"user": "U1"},
        {"actions": []},
        {"actions": "x"},
        {"actions": [{"value": None}]},
        {"actions": [{"value": "0"}]},
        {"actions": [{"value": "1e3"}]},
        {"actions": [{"value": "9" * 30}]},
    ):
        assert button_click(click_body(**broken)) is None, broken


def test_feedback_submissions() -> None:
    view = {**feedback_modal(7), "state": {"values": {"feedback": {"feedback_text": {"value": "  too salesy "}}}}}
    assert feedback_submission({"user": {"id": "U1"}, "view": view}) == FeedbackSubmission(7, "U1", "too salesy")
    assert feedback_submission({"user": {"id": "U1"}, "view": {**view, "state": None}}) == FeedbackSubmission(
        7, "U1", ""
    )
    assert feedback_submission({"user": {"id": "U1"}, "view": {**view, "private_metadata": ""}}) is None
    assert feedback_submission({"view": view}) is None


@pytest.mark.parametrize(
    ("name", "args", "channel", "done"),
    [
        ("publish_post", {"channel": "#news", "text": "x"}, "news", "posted in #news"),
        ("publish_post", {"channel": " <#C0NEWS|news> ", "text": "x"}, "C0NEWS", "posted in #C0NEWS"),
        ("send_message", {"to": "U0ANA", "text": "x"}, "U0ANA", "sent to U0ANA as a direct message"),
        ("send_message", {"to": "<@U0ANA>", "text": "x"}, "U0ANA", "sent to U0ANA as a direct message"),
        ("send_message", {"to": "@W0ANA", "text": "x"}, "W0ANA", "sent to W0ANA as a direct message"),
        ("send_message", {"to": "#random", "text": "x"}, "random", "sent in #random"),
    ],
)
def test_action_targets(name: str, args: dict[str, str], channel: str, done: str) -> None:
    target = target_of(ActionCall("c", name, args))
    assert (target.channel, target.done) == (channel, done)


@pytest.mark.parametrize(
    "call",
    [
        ActionCall("c", "publish_post", {"channel": " # ", "text": "x"}),
        ActionCall("c", "schedule_post", {"channel": "news", "text": "x", "at": "soon"}),
    ],
)
def test_action_targets_refused(call: ActionCall) -> None:
    with pytest.raises(ActionFailed):
        target_of(call)


def test_requests_go_to_the_approvals_channel_when_one_is_set() -> None:
    assert request_location(approval(), "") == ("C1", "5.5")
    assert request_location(approval(), "#approvals") == ("approvals", None)
    assert request_location(approval(channel_key="discord:1"), "") == (None, "5.5")


async def test_request_messages_are_remembered_with_the_approvals(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = await open_database(tmp_path / "db.sqlite3")
    await channels.ensure_channel(db, "slack:T1:C1", participants=["nova"], moderated=False)
    stored, _ = await approvals.request(
        db,
        batch="b",
        call_id="c",
        channel_key="slack:T1:C1",
        thread=None,
        persona_id="nova",
        action="publish_post",
        args={},
        timeout_seconds=60,
    )
    await RequestPlaces("slack", db).remember(stored.id, Place("C1", "9.9"))
    assert await RequestPlaces("slack", db).place(stored.id) == Place("C1", "9.9")  # another process, or a restart
    assert await RequestPlaces("slack", db).place(stored.id + 1) is None
    assert await RequestPlaces("discord", db).place(stored.id) is None  # one table; another platform's place is not its

    in_memory = RequestPlaces("slack")
    await in_memory.remember(7, Place("C1", "9.9"))
    assert await in_memory.place(7) == Place("C1", "9.9") and await RequestPlaces("slack").place(7) is None

    await db.close()  # storage failing: still known in this process, and only a warning
    failing = RequestPlaces("slack", db)
    await failing.remember(1, Place("C1", "1.1"))
    assert await failing.place(1) == Place("C1", "1.1")
    assert await RequestPlaces("slack", db).place(1) is None
    assert "could not store where approval 1 was posted" in caplog.text


# -- approvals: the port on its own ----------------------------------------------------------------


async def test_port_executes_as_the_persona_and_raises_what_slack_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeSlackApi() as fake:
        port = SlackPort(make_web_client("xoxb-secret-unit", fake.api_url))
        done = await port.execute(
            "slack:T1:C1", PERSONAS["sage"], ActionCall("c", "send_message", {"to": "<@U0ANA>", "text": "psst <!here>"})
        )
        fake.fail_next("chat.postMessage", "channel_not_found")
        with pytest.raises(ActionFailed, match=r"^Slack did not deliver it \(channel_not_found\)$"):
            await port.execute(
                "slack:T1:C1", PERSONAS["sage"], ActionCall("c", "publish_post", {"channel": "nowhere", "text": "x"})
            )
    assert done == "sent to U0ANA as a direct message"
    [sent] = fake.delivered_posts()
    assert sent == {
        "channel": "U0ANA",
        "text": "psst &lt;!here&gt;",
        "unfurl_links": False,
        "username": "Sage",
        "icon_emoji": ":owl:",
    }
    assert "xoxb-secret-unit" not in caplog.text


async def test_port_mentions_only_approvers_user_ids() -> None:
    async with FakeSlackApi() as fake:
        approvers = {"slack:T1:C1": {"U0BEA", "W0CAL", "!channel", "here", "<!everyone>"}}
        port = SlackPort(
            make_web_client("xoxb-unit", fake.api_url), approvers_for=lambda key: approvers.get(key, set())
        )
        await port.notify_approvers("slack:T1:C1", "the model failed 3 times @channel")
        await port.notify_approvers("slack:T1:C2", "nobody to tell")
    first, second = fake.delivered_posts()
    assert first["text"] == "<@U0BEA> <@W0CAL> For the approvers: the model failed 3 times @\u200bchannel"
    assert second["text"] == "For the approvers: nobody to tell"


async def test_port_uses_the_approvals_channel_and_posts_a_decision_it_cannot_update() -> None:
    async with FakeSlackApi() as fake:
        client = make_web_client("xoxb-unit", fake.api_url)
        port = SlackPort(client, approvals_channel="#approvals", approvers_for=lambda key: {"UAPPROVER"})
        await port.request_approval(approval(), PERSONAS["nova"])
        decided = approval(
            status=ApprovalStatus.REJECTED,
            decided_by="Bea",
            decided_by_id="UAPPROVER",
            decided_by_team="T1",
            decided_at=1_700_000_060.0,
            comment="no",
        )
        await port.show_decision(decided, PERSONAS["nova"])
        restarted = SlackPort(client, approvals_channel="#approvals")  # nothing remembered, no file
        await restarted.show_decision(decided, PERSONAS["nova"])
    request, fallback = fake.delivered_posts()
    assert (request["channel"], "thread_ts" in request) == ("approvals", False)
    assert request["blocks"][0]["elements"][-1]["text"].endswith(" in <#C1>")
    [update] = [c.args for c in fake.calls_to("chat.update")]
    posted_at = fake.calls_to("chat.postMessage")[0].answer["ts"]
    assert (update["channel"], update["ts"]) == ("C0APPROVALS", posted_at)  # the ID Slack answered the post with
    assert update["text"] == "Approval #7: Rejected by <@UAPPROVER>: no"
    # The decider is mentioned by the id stored with the decision, also by a port that remembers nothing.
    assert fallback["channel"] == "approvals" and fallback["text"] == "Approval #7: Rejected by <@UAPPROVER>: no"


# -- python -m bot run -----------------------------------------------------------------------------


def test_approvals_on_slack_for_discord_need_an_approvals_channel(tmp_path) -> None:
    config = write_config(tmp_path, {"approvals": {"surface": "slack"}})
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-secret-1",
        "SLACK_SIGNING_SECRET": "s-secret",
        "DISCORD_TOKEN": "discord-secret-1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "bot", "--config", str(config), "run"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and 'surface = "slack" needs [slack] approvals_channel' in result.stderr
    assert "secret" not in result.stderr
