"""[View] and Revise on approval requests: the console's /view and /revise, storage on both backends,
a restart between the edit and its run. Slack and Discord: tests/test_slack.py, tests/test_discord.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from bot.approval_desk import Actor
from bot.command_values import Revise
from bot.inbound import Inbound
from graph.turn_text import split_turn
from storage import approvals
from storage.database import open_database
from storage.records import ApprovalStatus
from tests.conftest import run_console, write_config
from tests.fake_models import FakeModels

KEY = "console:acts"
YOU = Actor("you", "you")
ASKED = {"channel": "news", "text": "We launched!"}
EDITED = {"channel": "news", "text": "We launched today, at 9!"}
REQUEST = f"Nova, publish it. !!act publish_post {json.dumps(ASKED)}"


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


def publishing_nova() -> FakeModels:
    """Nova asks to publish ASKED once, then says back whatever tool result it hears."""

    async def reply(speaker: str, messages: list[BaseMessage]) -> str | AIMessage:
        history, _ = split_turn(messages)  # the turn's question follows the tool's result
        if isinstance(history[-1], ToolMessage):
            return f"Noted: {history[-1].content}"
        call = {"name": "publish_post", "args": ASKED, "id": "call-1", "type": "tool_call"}
        return AIMessage(content="Posting it once someone approves.", tool_calls=[call])

    return FakeModels(reply)


async def say(app, text: str) -> None:
    await app.service.handle(Inbound(KEY, "u1", "Ana", text))
    await app.service.wait_idle()


def test_console_revise_runs_the_edited_arguments_and_the_audit_log_keeps_both(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    out = run_console(
        config,
        "\n".join(
            [
                REQUEST,
                "/view 1",
                '/revise 1 {"channel": "news", "text": }',
                '/revise 1 {"channel": "news", "text": ""}',
                '/revise 1 ["news"]',
                '/revise 1 {"channel": "#news", "text": "We launched today, at 9!"}',
                "/revise 1 " + json.dumps(ASKED),
                "/view 1",
            ]
        ),
    )
    lines = out.splitlines()
    view = lines.index("[you] /view 1")
    assert lines[view + 1 : view + 7] == [
        "[system] Approval #1: Nova wants to run publish_post (pending)",
        "[system] Arguments:",
        "[system] {",
        '[system]   "channel": "news",',
        '[system]   "text": "We launched!"',
        "[system] }",
    ]
    assert (
        "[system] Approval #1 is unchanged: the arguments are not valid JSON (Expecting value at line 1, column 29)."
    ) in lines
    assert (
        "[system] Approval #1 is unchanged: bad arguments for publish_post: text: String should have at least "
        "1 character."
    ) in lines
    assert '[system] Approval #1 is unchanged: the arguments must be a JSON object, like {"channel": "news", ' in out
    assert "[system] Approved #1 with the edited arguments." in lines
    assert "[Nova in #news] We launched today, at 9!" in lines
    assert out.count("[Nova in #news]") == 1 and "[Nova in #news] We launched!" not in out
    assert "[system] Approval #1 was already decided (executed)." in lines
    after = lines[lines.index("[you] /view 1", view + 1) :]
    assert after[1:3] == [
        "[system] Approval #1: Nova wants to run publish_post (executed)",
        "[system] Arguments, as edited by you:",
    ]
    assert '[system]   "text": "We launched today, at 9!"' in after and "[system] As requested:" in after
    assert '[system]   "text": "We launched!"' in after

    async def audit() -> list[tuple[str, str | None, str]]:
        db = await open_database(tmp_path / "data" / "roundtable.sqlite3")
        try:
            return [(e.event, e.actor, e.detail) for e in await approvals.audit_events(db)]
        finally:
            await db.close()

    assert asyncio.run(audit()) == [
        ("requested", "nova", json.dumps(ASKED)),
        ("approved", "you", f"arguments edited from {json.dumps(ASKED)} to {json.dumps(EDITED)}"),
        ("executed", None, "posted in #news"),
    ]


async def test_a_revised_approval_runs_once_with_the_edit_and_the_persona_hears_it(open_test_app, port) -> None:
    models = publishing_nova()
    async with open_test_app(models=models) as app:
        await say(app, "Nova, announce the launch.")
        [pending] = await approvals.pending(app.db)
        stranger = await app.service.approval_desk.revise(pending.id, Actor("u9", "Stranger"), EDITED)
        bad = await app.service.approval_desk.revise(pending.id, YOU, {**EDITED, "colour": "red"})
        unchanged = await approvals.get(app.db, pending.id)
        revised, approved = await asyncio.gather(
            app.service.run_command(KEY, Revise(pending.id, EDITED), actor=YOU),
            app.service.approval_desk.decide(pending.id, YOU, approve=True),
        )
        await app.service.wait_idle()
        done = await approvals.get(app.db, pending.id)
        events = await approvals.audit_events(app.db)
        shown = await app.service.approval_desk.show_arguments(done.id, YOU) if done else None
        hidden = await app.service.approval_desk.show_arguments(pending.id, Actor("u9", "Stranger"))

    assert (stranger.ok, stranger.reply) == (False, f"Only approvers can decide; #{pending.id} stays pending.")
    assert (bad.ok, bad.reply) == (
        False,
        f"Approval #{pending.id} is unchanged: bad arguments for publish_post: colour: Extra inputs are not permitted.",
    )
    assert unchanged is not None and unchanged.status is ApprovalStatus.PENDING and unchanged.args == ASKED
    assert [revised.ok, approved.ok].count(True) == 1  # the first decision wins, whichever it was
    assert done is not None and done.status is ApprovalStatus.EXECUTED
    assert len(port.executed) == 1
    if revised.ok:
        assert port.executed == [("nova", "publish_post", EDITED)]
        assert (done.args, done.original_args, done.decided_by) == (EDITED, ASKED, "you")
        assert split_turn(models.calls[-1][1])[0][-1].content == (
            f"Approved by you, executed: did publish_post (you edited the arguments before approving: "
            f"{json.dumps(EDITED)})"
        )
        assert shown is not None and '"text": "We launched today, at 9!"' in shown.reply
        assert 'As requested:\n{\n  "channel": "news",\n  "text": "We launched!"\n}' in shown.reply
    else:
        assert port.executed == [("nova", "publish_post", ASKED)] and done.original_args is None
    assert [e.event for e in events] == ["requested", "approved", "executed"]
    assert (hidden.ok, hidden.reply) == (False, f"Only approvers can see the full arguments of #{pending.id}.")


async def test_an_edit_stored_before_a_stop_runs_the_edited_arguments_after_the_restart(open_test_app, port) -> None:
    async with open_test_app() as app:
        await say(app, REQUEST)
        [pending] = await approvals.pending(app.db)
        # The process stops right after the edit and approval commit, before the work it released runs:
        # the decision is all that is stored, as it would be.
        assert await approvals.approve_edited(app.db, pending.id, EDITED, actor="you") is not None

    assert port.executed == []
    async with open_test_app() as app:  # the same data: start-up finds the approved work and runs it
        await app.service.wait_idle()
        done = await approvals.get(app.db, pending.id)

    assert port.executed == [("nova", "publish_post", EDITED)]
    assert done is not None and done.status is ApprovalStatus.EXECUTED and done.original_args == ASKED


async def test_revising_with_the_same_arguments_is_a_plain_approval(app, port) -> None:
    await say(app, REQUEST)
    [pending] = await approvals.pending(app.db)
    reply = await app.service.approval_desk.revise(pending.id, YOU, {"channel": "#news", "text": "We launched!"})
    await app.service.wait_idle()
    done = await approvals.get(app.db, pending.id)

    assert reply.reply == f"Approved #{pending.id} (the arguments were unchanged)."
    assert done is not None and done.original_args is None and port.executed == [("nova", "publish_post", ASKED)]
    assert [e.detail for e in await approvals.audit_events(app.db) if e.event == "approved"] == [""]


async def test_a_discord_born_request_shown_on_slack_is_viewed_and_revised_by_slacks_approvers(
    open_test_app, port
) -> None:
    """[approvals] surface = "slack": the Slack approvals channel's approvers decide, so they View and Revise."""
    sections = {"approvals": {"surface": "slack", "approvers": {"slack": ["UAPPROVER"]}}}
    shown_in = "slack:T0FAKE:CAPPROVALS"
    bea = Actor("UAPPROVER", "Bea", "T0FAKE")
    async with open_test_app(sections) as app:
        await app.service.handle(Inbound("discord:42", "u1", "Ana", REQUEST))
        await app.service.wait_idle()
        [pending] = await approvals.pending(app.db)
        from_discord = await app.service.approval_desk.show_arguments(
            pending.id, bea
        )  # Discord's approvers: nobody here
        shown = await app.service.approval_desk.show_arguments(pending.id, bea, decided_in=shown_in)
        revised = await app.service.approval_desk.revise(pending.id, bea, EDITED, decided_in=shown_in)
        await app.service.wait_idle()

    assert not from_discord.ok and shown.ok and '"text": "We launched!"' in shown.reply
    assert revised.reply == f"Approved #{pending.id} with the edited arguments."
    assert port.executed == [("nova", "publish_post", EDITED)]
