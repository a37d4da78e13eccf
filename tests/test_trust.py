"""Trust from people's decisions only (issue 33): levels from the counts, counted by the database per
persona and per workspace or guild; runs that needed nobody never count; trust never relaxes an
MCP tool. Rounds run through the real service and storage with the recording port."""

from __future__ import annotations

import json
from typing import Any

from bot.approval_desk import Actor
from bot.command_values import ShowTrust
from bot.inbound import Inbound
from graph.policy import PolicySettings, ToolStanding, Trust, Verdict, verdict
from graph.trust import DAY, TaskCounts, next_level, task_counts, trust_record
from storage import approvals
from storage import trust as stored_trust
from storage.records import ApprovalMode, EndedTask, TrustCounts

NOW = 1_000 * DAY
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
DEE = Actor("d1", "Dee")


def counts(approved: int = 0, rejected: int = 0, failed: int = 0, *, days: float = 0) -> TrustCounts:
    return TrustCounts("nova", approved, rejected, failed, 0, NOW - days * DAY)


def steps(finished: int = 0, failed: int = 0) -> TaskCounts:
    return TaskCounts(finished, failed, None)


def test_new_until_fifty_decisions_ninety_percent_five_finished_tasks_and_seven_days() -> None:
    assert trust_record(counts(49, days=8), NOW, steps(5)).level is Trust.NEW
    assert trust_record(counts(50, days=8), NOW, steps(5)).level is Trust.PROFICIENT
    assert trust_record(counts(50, days=8), NOW, steps(4)).level is Trust.NEW  # one task short
    assert trust_record(counts(50, days=8), NOW, steps(5, 2)).level is Trust.NEW  # 5 of 7 steps: 71 % < 80 %
    assert trust_record(counts(50, days=8), NOW, steps(8, 2)).level is Trust.PROFICIENT  # 80 %
    assert trust_record(counts(50, days=6), NOW, steps(5)).level is Trust.NEW
    assert trust_record(counts(45, 6, days=8), NOW, steps(5)).level is Trust.NEW  # 45/51 = 88 %
    assert trust_record(counts(50, 0, 6, days=8), NOW, steps(5)).level is Trust.NEW  # approved, then failed: 44/50


def test_expert_after_two_hundred_decisions_ninety_eight_percent_twenty_tasks_and_thirty_days() -> None:
    record = trust_record(counts(200, days=31), NOW, steps(20))
    assert record.level is Trust.EXPERT and record.decided == 200 and record.approval_rate == 1.0
    assert trust_record(counts(200, days=31), NOW, steps(19)).level is Trust.PROFICIENT
    assert trust_record(counts(200, days=29), NOW, steps(20)).level is Trust.PROFICIENT
    assert trust_record(None, NOW).level is Trust.NEW
    assert Trust("novice") is Trust.NEW and Trust.NOVICE is Trust.NEW  # the old name still reads


def test_next_level_says_what_is_missing() -> None:
    nova = trust_record(counts(38, days=2), NOW, steps(3))
    assert next_level(nova) == "12 more decided requests, 2 more finished tasks and 5 more days to reach proficient"
    # 45 of 51 approved: nine more approvals in a row make 54 of 60, 90 %; half a day and one task short
    nova = trust_record(counts(45, 6, days=6.5), NOW, steps(4))
    assert next_level(nova) == "9 more approved requests, 1 more finished task and 1 more day to reach proficient"
    # 5 finished, 2 failed: 71 %; 3 more finished make 8 of 10
    assert next_level(trust_record(counts(50, days=8), NOW, steps(5, 2))) == "3 more finished tasks to reach proficient"
    proficient = trust_record(counts(190, days=31), NOW, steps(20))
    assert next_level(proficient) == "10 more decided requests to reach expert"
    assert next_level(trust_record(counts(200, days=31), NOW, steps(20))) == "the highest level"


def ended(status: str, *assigned: tuple[str, str, str | None], at: float = NOW) -> EndedTask:
    """A task that ended with steps (assignee, status, done_by)."""
    plan = {
        "title": "Launch",
        "steps": [
            {"id": i, "title": "t", "instruction": "i", "capability": "c", "status": st, "assignee": who, "done_by": by}
            for i, (who, st, by) in enumerate(assigned, 1)
        ],
    }
    return EndedTask(status, json.dumps(plan), at)


def test_finished_and_failed_tasks_count_from_the_plans_of_tasks_that_ended() -> None:
    history = [
        ended("completed", ("nova", "completed", None), ("nova", "completed", None), ("sage", "completed", None)),
        ended("completed", ("nova", "completed", "Ana")),  # a person did it: nobody's
        ended("failed", ("nova", "completed", None), ("nova", "failed", None), ("nova", "blocked", None)),
        ended("completed", ("nova", "completed", None), at=NOW - 10 * DAY),  # before the incident
    ]
    assert task_counts(history, "nova", since=NOW - 5 * DAY) == TaskCounts(2, 1, NOW)
    assert task_counts(history, "nova") == TaskCounts(3, 1, NOW - 10 * DAY)
    assert task_counts(history, "sage").finished == 1


def test_trust_never_relaxes_an_mcp_tool() -> None:
    relaxed = PolicySettings(auto_relax=True)
    common: dict[str, Any] = {"mode": ApprovalMode.IN_THE_LOOP, "actions_in_turn": 1, "trust": Trust.EXPERT}
    assert verdict("publish_post", settings=relaxed, **common).verdict is Verdict.ANNOUNCE
    tool = ToolStanding(read_only=False)
    assert verdict("notes.write_note", settings=relaxed, tool=tool, **common).verdict is Verdict.WAIT


def nova_row(table: str) -> str:
    return next(line for line in table.splitlines() if line.startswith("Nova:"))


async def trust_in(app: Any, key: str) -> str:
    return nova_row((await app.service.run_command(key, ShowTrust())).reply)


async def test_trust_does_not_move_after_300_read_only_runs(open_test_app: Any) -> None:
    """Actions that needed nobody (here, on-the-loop publications) are not people's decisions."""
    key = "console:farm"
    async with open_test_app() as app:
        await app.service.handle(Inbound(key, "you", "you", "/approvals mode on-the-loop", tenant="console"))
        before = await trust_in(app, key)
        for _ in range(300):  # "you" approves here, so the flood limits do not hold the runs back
            await app.service.handle(Inbound(key, "you", "you", PUBLISH, tenant="console"))
            await app.service.wait_idle(key)
        ran = [e for e in await approvals.audit_events(app.db) if e.event == "executed"]

        assert len(ran) == 300 and await trust_in(app, key) == before
        assert "0 decided by people" in before


async def test_trust_counts_peoples_decisions_per_guild_and_an_incident_starts_again(open_test_app: Any) -> None:
    sections = {"approvals": {"approvers": {"discord": [DEE.id]}}}
    async with open_test_app(sections) as app:
        desk = app.service.approval_desk

        async def decided(key: str, guild: str, approve: bool, incident: bool = False) -> None:
            await app.service.handle(Inbound(key, "u1", "Ana", PUBLISH, tenant=guild))
            await app.service.wait_idle()
            [pending] = await approvals.pending(app.db, key)
            assert (await desk.decide(pending.id, DEE, approve, incident=incident)).ok
            await app.service.wait_idle()

        for _ in range(3):
            await decided("discord:1", "discord:A", True)
        await decided("discord:1", "discord:A", False)
        await app.service.handle(Inbound("discord:2", "u1", "Ana", "hello", tenant="discord:B"))
        await app.service.handle(Inbound("discord:3", "u1", "Ana", "hello", tenant="discord:A"))
        await app.service.wait_idle()
        in_a, in_b = await trust_in(app, "discord:3"), await trust_in(app, "discord:2")
        everywhere = await stored_trust.trust_counts(app.db, None)

        await decided("discord:1", "discord:A", False, incident=True)
        after_incident = await stored_trust.trust_counts(app.db, "discord:1")

    assert in_a.startswith("Nova: new (4 decided by people, 75% approved")
    assert in_b.startswith("Nova: new (0 decided by people")
    assert (everywhere["nova"].approved, everywhere["nova"].rejected) == (3, 1)
    assert after_incident["nova"].incidents == 1 and after_incident["nova"].reset_at is not None
    assert (after_incident["nova"].approved, after_incident["nova"].rejected, after_incident["nova"].first_at) == (
        0,
        0,
        None,
    )
