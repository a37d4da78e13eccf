"""[approvals] trust_sets_mode (issue 34): a persona's trust level chooses the mode of its calls (new
in-command, proficient in-the-loop, expert on-the-loop); a channel set to in-command keeps every call
there, and an MCP tool is never judged looser than in-the-loop. The pure function first, then the real
service and storage, with the counts seeded through storage: Nova is expert in one guild, new in another.
Last, /trust in the console after a real task: what each persona needs for the next level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.command_values import ShowTrust
from bot.inbound import Inbound
from graph.policy import PolicySettings, ToolStanding, Trust, Verdict, mode_for, verdict
from graph.trust import DAY
from storage import approvals, tasks
from storage.database import Database
from storage.records import ApprovalMode, ApprovalStatus
from tests.conftest import run_console, write_config

IN_COMMAND, IN_THE_LOOP, ON_THE_LOOP = ApprovalMode.IN_COMMAND, ApprovalMode.IN_THE_LOOP, ApprovalMode.ON_THE_LOOP


@pytest.mark.parametrize("channel", list(ApprovalMode))
def test_without_trust_sets_mode_the_channel_decides(channel: ApprovalMode) -> None:
    for trust in Trust:
        assert mode_for(channel, trust, trust_sets_mode=False, mcp_tool=False) is channel


def test_trust_chooses_the_mode_unless_the_channel_is_in_command() -> None:
    chosen = {
        (channel, trust): mode_for(channel, trust, trust_sets_mode=True, mcp_tool=False)
        for channel in (IN_THE_LOOP, ON_THE_LOOP)
        for trust in Trust
    }
    assert set(chosen.values()) == {IN_COMMAND, IN_THE_LOOP, ON_THE_LOOP}
    for (_, trust), mode in chosen.items():
        assert mode is {Trust.NEW: IN_COMMAND, Trust.PROFICIENT: IN_THE_LOOP, Trust.EXPERT: ON_THE_LOOP}[trust]
    assert mode_for(IN_COMMAND, Trust.EXPERT, trust_sets_mode=True, mcp_tool=False) is IN_COMMAND
    assert mode_for(ON_THE_LOOP, Trust.EXPERT, trust_sets_mode=True, mcp_tool=True) is IN_THE_LOOP


def test_verdicts_with_trust_sets_mode() -> None:
    settings = PolicySettings(sensitive=("publish",), trust_sets_mode=True)

    def decided(action: str, trust: Trust, tool: ToolStanding | None = None, turn: int = 1) -> Verdict:
        return verdict(
            action, mode=IN_THE_LOOP, actions_in_turn=turn, trust=trust, settings=settings, tool=tool
        ).verdict

    assert decided("send_message", Trust.NEW) is Verdict.WAIT  # would run in the loop: a new persona waits
    assert decided("send_message", Trust.PROFICIENT) is Verdict.RUN
    assert decided("publish_post", Trust.PROFICIENT) is Verdict.WAIT
    assert decided("publish_post", Trust.EXPERT) is Verdict.ANNOUNCE
    assert decided("publish_post", Trust.EXPERT, turn=4) is Verdict.WAIT  # a burst still waits
    assert decided("notes.write_note", Trust.EXPERT, ToolStanding(read_only=False)) is Verdict.WAIT
    assert decided("notes.read_note", Trust.EXPERT, ToolStanding(read_only=True)) is Verdict.RUN


# -- the real service, counts seeded through storage -------------------------------------------------


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend  # the service test runs on SQLite and on PostgreSQL


SECTIONS = {"approvals": {"trust_sets_mode": True, "sensitive": ["publish"], "approvers": {"discord": ["d1"]}}}
SEND = 'Nova, tell Zoe. !!act send_message {"to": "Zoe", "text": "The server is back"}'
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'


async def make_expert(db: Database, key: str, persona_id: str) -> None:
    """200 requests a person approved, and 20 finished task steps in 4 completed tasks that ended 31 days
    ago (the audit log is append-only: the tasks carry the days)."""
    for n in range(200):
        asked, _ = await approvals.request(
            db,
            batch=f"seed:{n}",
            call_id="c",
            channel_key=key,
            thread=None,
            persona_id=persona_id,
            action="publish_post",
            args={"channel": "news", "text": f"post {n}"},
            timeout_seconds=60,
        )
        await approvals.decide(db, asked.id, ApprovalStatus.APPROVED, actor="Dee", person=("d1", None))
    for n in range(4):
        task = await tasks.start(db, key, None, f"seeded task {n}", "d1", "Dee")
        assert task is not None
        steps = [
            {"id": i, "title": "t", "instruction": "i", "capability": "writing", "status": "completed"}
            | {"assignee": persona_id}
            for i in range(1, 6)
        ]
        await tasks.save(db, task.id, status="completed", plan=json.dumps({"title": "Seeded", "steps": steps}))
    async with db.transaction() as tx:
        await tx.execute("UPDATE tasks SET updated_at = updated_at - ? WHERE channel_key = ?", (31 * DAY, key))


async def test_a_new_persona_waits_and_an_expert_runs_and_is_announced(open_test_app: Any, port: Any) -> None:
    expert_in, new_in = "discord:1", "discord:2"
    async with open_test_app(SECTIONS) as app:
        for key, guild in ((expert_in, "discord:A"), (new_in, "discord:B")):
            await app.service.handle(Inbound(key, "d1", "Dee", "hello", tenant=guild))
        await app.service.wait_idle()
        await make_expert(app.db, expert_in, "nova")
        trust_a = (await app.service.run_command(expert_in, ShowTrust())).reply
        trust_b = (await app.service.run_command(new_in, ShowTrust())).reply

        await app.service.handle(Inbound(new_in, "d1", "Dee", SEND, tenant="discord:B"))
        await app.service.wait_idle()
        waiting_new = await approvals.pending(app.db, new_in)
        await app.service.handle(Inbound(expert_in, "d1", "Dee", PUBLISH, tenant="discord:A"))
        await app.service.wait_idle()
        waiting_expert = await approvals.pending(app.db, expert_in)

    assert "Nova: expert (200 decided by people, 100% approved, 20 finished tasks, 0 failed, 31 days)" in trust_a
    assert "Nova: new (0 decided by people, 0% approved, 0 finished tasks, 0 failed, 0 days) — 50 more" in trust_b
    # New in guild B: a message that would run at once in the loop waits (in-command), and nothing ran.
    assert [a.action for a in waiting_new] == ["send_message"]
    assert not [e for e in port.executed if e[1] == "send_message"]
    # Expert in guild A: a sensitive post runs at once and is announced (on-the-loop).
    assert waiting_expert == []
    assert ("nova", "publish_post", {"channel": "news", "text": "We launched!"}) in port.executed
    assert any(text.startswith("[system] Nova ran publish_post(") for text in port.notices())


# -- /trust through the console: the task steps of a real task count -------------------------------


def test_trust_in_the_console_says_what_each_persona_needs_next(tmp_path: Path) -> None:
    transcript = run_console(write_config(tmp_path), "/task Research venues; write the invite\n/trust\n")
    assert "Task #1: Research venues (completed)" in transcript
    lines = transcript.splitlines()
    assert "[system] Trust levels:" in lines
    assert (
        "[system] Sage: new (0 decided by people, 0% approved, 1 finished task, 0 failed, 0 days)"
        " — 50 more decided requests, 4 more finished tasks and 7 more days to reach proficient"
    ) in lines
    assert (
        "[system] Rex: new (0 decided by people, 0% approved, 0 finished tasks, 0 failed, 0 days)"
        " — 50 more decided requests, 5 more finished tasks and 7 more days to reach proficient"
    ) in lines


def test_a_rolled_back_task_earns_no_trust(tmp_path: Path) -> None:
    script = "/trust\n/task Research venues; write the invite\n/trust\n/task cancel rollback\n/trust\n"
    transcript = run_console(write_config(tmp_path), script)
    before, during, after = (part.split("[you] ", 1)[0] for part in transcript.split("[you] /trust")[1:])
    sage = "[system] Sage: new (0 decided by people, 0% approved, {} finished task"
    assert sage.format(1) in during  # the finished task counted
    assert "[system] Nothing of task #1 is left to undo." in transcript
    assert sage.format(0) in after and after == before  # rolled back: as if it never ran
