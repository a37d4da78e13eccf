"""Cancel with rollback: `/task cancel rollback` asks approval to run the declared undos of what a
task did, newest first, each audited; rejected, nothing is undone. Through the console (scripted
model) for publish_post (undone by delete_post), and with the real notes MCP server over stdio for an
MCP tool's risk and undo from config ([mcp.servers.notes] risk, undo)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.command_values import TaskCommand, parse_task
from graph.mcp import McpTool, ToolCatalog
from graph.rollback import rollback_plan
from storage.records import Approval, ApprovalStatus, TaskStep
from tests.conftest import run_console, write_config
from tests.mcp_setup import calls_received, notes_environment, stdio_sections

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
