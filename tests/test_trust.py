"""Trust from people's decisions only (issue 33): levels from the counts, counted by the database per
persona and per workspace or guild; runs that needed nobody never count; trust never relaxes an
MCP tool. Rounds run through the real service and storage with the recording port."""

from __future__ import annotations

from typing import Any

from bot.approval_desk import Actor
from bot.command_values import ShowTrust
from bot.inbound import Inbound
from graph.policy import PolicySettings, ToolStanding, Trust, Verdict, verdict
from graph.trust import DAY, trust_record
from storage import approvals
from storage import trust as stored_trust
from storage.records import ApprovalMode, TrustCounts

NOW = 1_000 * DAY
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
DEE = Actor("d1", "Dee")


def counts(approved: int = 0, rejected: int = 0, failed: int = 0, *, days: float = 0) -> TrustCounts:
    return TrustCounts("nova", approved, rejected, failed, 0, NOW - days * DAY)


def test_novice_until_fifty_decisions_ninety_percent_and_seven_days() -> None:
    assert trust_record(counts(49, days=8), NOW).level is Trust.NOVICE
    assert trust_record(counts(50, days=8), NOW).level is Trust.PROFICIENT
    assert trust_record(counts(50, days=6), NOW).level is Trust.NOVICE
    assert trust_record(counts(45, 6, days=8), NOW).level is Trust.NOVICE  # 45/51 = 88 %
    assert trust_record(counts(50, 0, 6, days=8), NOW).level is Trust.NOVICE  # approved, then failed: 44/50


def test_expert_after_two_hundred_decisions_ninety_eight_percent_and_thirty_days() -> None:
    record = trust_record(counts(200, days=31), NOW)
    assert record.level is Trust.EXPERT and record.tasks == 200 and record.approval_rate == 1.0
    assert trust_record(counts(200, days=29), NOW).level is Trust.PROFICIENT
    assert trust_record(None, NOW).level is Trust.NOVICE


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

    assert in_a.startswith("Nova: novice (4 decided by people, 75% approved")
    assert in_b.startswith("Nova: novice (0 decided by people")
    assert (everywhere["nova"].approved, everywhere["nova"].rejected) == (3, 1)
    assert after_incident["nova"] == TrustCounts("nova", 0, 0, 0, 1, None)
