"""Cancel with rollback: `/task cancel rollback` asks approval to run the declared undos of what a
task did, newest first, each audited; rejected, nothing is undone. Through the console (scripted
model) for publish_post (undone by delete_post), and with the real notes MCP server over stdio for an
MCP tool's risk and undo from config ([mcp.servers.notes] risk, undo)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.command_values import TaskCommand, parse_task
from bot.discord_bot.runner import DiscordBot
from bot.slack.text import unescape_from_slack
from graph.mcp import McpTool, ToolCatalog
from graph.rollback import rollback_plan
from storage.records import Approval, ApprovalStatus, TaskStep
from tests.conftest import run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.mcp_setup import calls_received, notes_environment, stdio_sections
from tests.slack_harness import SlackHarness

PUBLISH = '!!act publish_post {"channel": "news", "text": "We launched!"}'
WRITE = '!!act write_note {"title": "launch", "text": "Ship on Friday"}'
POSTED = "[Nova in #news] We launched!"
DELETED = "[Nova deleted their post in #news] We launched!"


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM audit_log ORDER BY id")]


# -- the plan: pure ------------------------------------------------------------------------------------


def approval(number: int, action: str, args: dict[str, Any], *, status: str = "executed", **more: Any) -> Approval:
    return Approval(
        id=number,
        batch=more.pop("batch", f"approval:b{number}"),
        call_id=more.pop("call_id", f"c{number}"),
        channel_key="console:general",
        thread=None,
        persona_id="nova",
        action=action,
        args=args,
        status=ApprovalStatus(status),
        requested_at=0.0,
        expires_at=0.0,
        decided_by="you",
        decided_at=0.0,
        comment=None,
        incident=False,
        result="done",
        task=TaskStep(1, "Launch", 1, 2),
        **more,
    )


def test_the_rollback_plan_is_newest_first_and_leaves_out_what_is_undone_or_has_no_undo() -> None:
    catalog = ToolCatalog({"notes": ["read_note"]}, undos={"notes": {"write_note": "delete_note"}})
    catalog.update("notes", [McpTool("notes", "delete_note", "", {"type": "object", "properties": {"title": {}}})])
    post = approval(1, "publish_post", {"channel": "news", "text": "hi"})
    note = approval(2, "notes.write_note", {"title": "t", "text": "x"})
    message = approval(3, "send_message", {"to": "ana", "text": "hi"})
    failed = approval(4, "publish_post", {"channel": "news", "text": "no"}, status="failed")
    undos, cannot = rollback_plan([post, note, message, failed], catalog)
    assert [(u.done.id, u.name, u.args) for u in undos] == [
        (2, "notes.delete_note", {"title": "t"}),  # only what the undo tool's schema takes
        (1, "delete_post", {"channel": "news", "text": "hi"}),
    ]
    assert [a.id for a in cannot] == [3]  # send_message declares no undo; a failed run did nothing

    asked = approval(5, "delete_post", post.args, status="pending", batch="rollback:x", call_id="undo-1")
    undos, _ = rollback_plan([post, note, asked], catalog)
    assert [u.done.id for u in undos] == [2]  # #1's undo is asked for already
    turned_down = approval(6, "delete_post", post.args, status="rejected", batch="rollback:y", call_id="undo-1")
    undos, _ = rollback_plan([post, turned_down], catalog)
    assert [u.done.id for u in undos] == [1]  # rejected: it may be asked again


def test_task_cancel_rollback_is_a_form_of_cancel() -> None:
    assert parse_task("cancel rollback wrong date") == TaskCommand("cancel", "wrong date", rollback=True)
    assert parse_task("cancel Rollback") == TaskCommand("cancel", "", rollback=True)
    assert parse_task("cancel the rollout slipped") == TaskCommand("cancel", "the rollout slipped")


# -- the console ---------------------------------------------------------------------------------------


def test_console_rollback_deletes_the_published_post_after_approval_and_audits_it(tmp_path: Path) -> None:
    script = (
        f"/task Announce the launch {PUBLISH}\n/approve 1\n/task cancel rollback\n/approve 2\n/task cancel rollback\n"
    )
    transcript = run_console(write_config(tmp_path), script)
    assert POSTED in transcript
    asked = transcript.split("[you] /task cancel rollback", 1)[1]
    [request] = [line for line in asked.splitlines() if line.startswith("[approval 2] ")]
    assert request.startswith("[approval 2] Nova wants delete_post(channel='news', text='We launched!')")
    assert " - Step 1 of 1 of task #1 “Announce the launch” · risk high - waits: undoes #1, publish_post(" in request
    assert "[system] Rollback of task #1 waits for approval, newest first: #2 undoes #1 publish_post." in asked
    assert DELETED not in asked.split("[you] /approve 2", 1)[0]  # nothing undone before the approval
    assert DELETED in asked.split("[you] /approve 2", 1)[1]
    assert "[system] Nothing of task #1 is left to undo." in transcript  # asked twice: undone once

    undo = [(e["event"], e["risk"]) for e in audit(tmp_path) if e["action"] == "delete_post"]
    assert undo == [("requested", "high"), ("approved", "high"), ("executed", "high")]


def test_console_cancel_rollback_of_a_running_task_cancels_it_and_asks_for_the_undo(tmp_path: Path) -> None:
    steps = f"/task Announce the launch; research the reactions; review them {PUBLISH}\n/task pause\n/approve 1\n"
    transcript = run_console(write_config(tmp_path), f"{steps}/task cancel rollback changed plans\n/approve 2\n")
    assert (
        "[system] Task #1 is cancelled (changed plans). Rollback of task #1 waits for approval, newest first: "
        "#2 undoes #1 publish_post." in transcript
    )
    assert "[system] Task #1: Cancelled by you: changed plans. 1 of 3 steps completed, 0 failed." in transcript
    assert DELETED in transcript.split("[you] /approve 2", 1)[1]
    assert "[Sage]" not in transcript  # the cancelled task ran no further step


def test_console_a_rejected_rollback_undoes_nothing(tmp_path: Path) -> None:
    script = f"/task Announce the launch {PUBLISH}\n/approve 1\n/task cancel rollback\n/reject 2 keep it\n"
    transcript = run_console(write_config(tmp_path), script)
    assert POSTED in transcript and "[approval 2] Nova wants delete_post(" in transcript
    assert "deleted" not in transcript
    assert "[action 2] rejected by you: keep it" in transcript
    assert [e["event"] for e in audit(tmp_path) if e["action"] == "delete_post"] == ["requested", "rejected"]


# -- an MCP tool's risk and undo from config ---------------------------------------------------------------


@pytest.fixture
def notes_with_delete(tmp_path: Path) -> Iterator[Path]:
    os.environ["NOTES_DELETE"] = "1"  # the notes server offers delete_note too
    try:
        with notes_environment(tmp_path) as log:
            yield log
    finally:
        os.environ.pop("NOTES_DELETE", None)


def notes_config(tmp_path: Path, **approvals: Any) -> Path:
    sections = stdio_sections(tmp_path, risk={"write_note": "low"}, undo={"write_note": "delete_note"})
    return write_config(tmp_path, {**sections, "approvals": approvals})


def test_a_low_risk_tool_runs_at_once_with_auto_approve_low_and_its_undo_runs_on_rollback(
    tmp_path: Path, notes_with_delete: Path
) -> None:
    script = f"/task Review the launch notes {WRITE}\n/task cancel rollback\n/approve 2\n"
    transcript = run_console(notes_config(tmp_path, auto_approve_risk="low"), script)
    assert "[action 1] ran: notes.write_note(title='launch', text='Ship on Friday')" in transcript  # no request
    assert "[approval 1]" not in transcript
    [request] = [line for line in transcript.splitlines() if line.startswith("[approval 2] ")]
    assert request.startswith("[approval 2] Rex wants notes.delete_note(title='launch')")
    assert "· risk high - waits: undoes #1, notes.write_note(" in request  # delete is sensitive: high
    assert [(c["tool"], c["args"]) for c in calls_received(notes_with_delete)] == [
        ("write_note", {"title": "launch", "text": "Ship on Friday"}),
        ("delete_note", {"title": "launch"}),  # the original arguments its schema takes
    ]
    ran = [(e["event"], e["actor"], e["risk"]) for e in audit(tmp_path) if e["action"] == "notes.write_note"]
    assert ran == [("approved", "policy", "low"), ("executed", None, "low")]


def test_without_auto_approve_the_same_low_risk_tool_waits(tmp_path: Path, notes_with_delete: Path) -> None:
    transcript = run_console(notes_config(tmp_path), f"/task Review the launch notes {WRITE}\n")
    [request] = [line for line in transcript.splitlines() if line.startswith("[approval 1] ")]
    assert request.startswith("[approval 1] Rex wants notes.write_note(title='launch', text='Ship on Friday')")
    assert "· risk low" in request
    assert calls_received(notes_with_delete) == []


# -- Slack -----------------------------------------------------------------------------------------------


async def test_slack_rollback_deletes_the_published_post_after_approval(slack: SlackHarness) -> None:
    slack.fake.channel_names["C0NEWS"] = "news"
    await slack.command("/task", f"Announce the launch {PUBLISH}")
    [request] = slack.approval_requests()
    await slack.click("approval_approve", request)
    [(where, ts)] = [k for k, m in slack.fake.messages.items() if m.get("text") == "We launched!"]
    assert where == "C0NEWS" and slack.fake.messages[(where, ts)]["username"] == "Nova"

    await slack.command("/task", "cancel rollback")
    assert slack.replies_to_command()[-1]["text"] == (
        "Rollback of task #1 waits for approval, newest first: #2 undoes #1 publish_post."
    )
    [_, undo] = slack.approval_requests()
    assert "delete_post" in undo["text"] and "Step 1 of 1 of task #1" in unescape_from_slack(undo["text"])
    assert (where, ts) in slack.fake.messages  # nothing undone before the approval
    await slack.click("approval_approve", undo)
    await slack.bot.wait_idle()
    assert (where, ts) not in slack.fake.messages  # the post is gone from #news
    [deleted] = slack.fake.calls_to("chat.delete")
    assert deleted.args == {"channel": "C0NEWS", "ts": ts}


async def test_slack_two_rollbacks_asked_at_once_request_each_undo_once(slack: SlackHarness) -> None:
    slack.fake.channel_names["C0NEWS"] = "news"
    await slack.command("/task", f"Announce the launch {PUBLISH}")
    [request] = slack.approval_requests()
    await slack.click("approval_approve", request)

    await asyncio.gather(slack.command("/task", "cancel rollback"), slack.command("/task", "cancel rollback"))
    answers = sorted(reply["text"] for reply in slack.replies_to_command()[-2:])
    assert answers == [
        "Nothing of task #1 is left to undo.",
        "Rollback of task #1 waits for approval, newest first: #2 undoes #1 publish_post.",
    ]
    [_, undo] = slack.approval_requests()  # one request for the one undo
    await slack.click("approval_approve", undo)
    await slack.bot.wait_idle()
    assert len(slack.fake.calls_to("chat.delete")) == 1


# -- Discord ---------------------------------------------------------------------------------------------

DISCORD_APPROVERS = {"approvals": {"approvers": {"discord": [str(p.OWNER_USER_ID)]}}}


async def discord_task(fake: FakeDiscord, bot: DiscordBot, text: str) -> str:
    asked = await fake.send_slash_command("task", {"text": text}, permissions=p.MEMBER_PERMISSIONS)
    [answer] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
    await settle(bot)
    return str(answer.json["content"])


async def decide_on_discord(fake: FakeDiscord, bot: DiscordBot, approval_id: int, verb: str, shows: str) -> None:
    [message_id] = [i for i, m in fake.messages.items() if f"**Approval #{approval_id}**" in m["content"]]
    await fake.click_button(message_id, f"approval:{approval_id}:{verb}", clicker=p.user(p.OWNER_USER_ID, "Owner"))
    await fake.wait_for_calls(
        "PATCH",
        rf"/channels/{p.TEXT_CHANNEL_ID}/messages/{message_id}",
        where=lambda c: shows in c.json.get("content", ""),
    )
    await settle(bot)


def news_posts(fake: FakeDiscord) -> list[str]:
    return [m["content"] for m in fake.history if m["channel_id"] == str(p.NEWS_CHANNEL_ID) and m.get("webhook_id")]


async def test_discord_rollback_deletes_the_published_post_after_approval(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot(sections=DISCORD_APPROVERS) as bot:
        await discord_task(fake, bot, f"Announce the launch {PUBLISH}")
        await decide_on_discord(fake, bot, 1, "approve", "executed")
        assert news_posts(fake) == ["We launched!"]
        asked = await discord_task(fake, bot, "cancel rollback")
        assert asked == "Rollback of task #1 waits for approval, newest first: #2 undoes #1 publish_post."
        [request] = [m for m in fake.messages.values() if "**Approval #2**" in m["content"]]
        assert request["content"].splitlines()[:2] == [
            "**Approval #2**: Nova wants to run `delete_post`",
            "Step 1 of 1 of task #1 “Announce the launch” · risk high",
        ]
        assert news_posts(fake) == ["We launched!"]  # nothing undone before the approval
        await decide_on_discord(fake, bot, 2, "approve", "executed")
    assert news_posts(fake) == []  # gone from #news
    news_hook = next(str(i) for i, w in fake.webhooks.items() if w["channel_id"] == str(p.NEWS_CHANNEL_ID))
    [deleted] = fake.find_calls("DELETE", r"/webhooks/\d+/[^/]+/messages/\d+")
    assert deleted.path.startswith(f"/webhooks/{news_hook}/")  # through the webhook that posted it
