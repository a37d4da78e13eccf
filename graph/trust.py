"""Trust levels from the audit log: novice, proficient (50 tasks, 90 % approved, 7 days),
expert (200 tasks, 98 %, 30 days). A rejection marked as an incident starts the count again."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from graph.policy import Trust
from storage.records import AuditEvent

DAY = 86_400.0
LEVELS = ((Trust.EXPERT, 200, 0.98, 30), (Trust.PROFICIENT, 50, 0.90, 7))
_DECIDED = {"approved", "rejected", "expired"}
_GOOD = {"approved"}
# A persona's notes to itself and people's corrections of its memory act on nothing outside: no evidence
# that its actions can be trusted (graph/memory.py, bot/memory.py).
NO_EVIDENCE = {"remember", "memory"}


@dataclass(frozen=True)
class TrustRecord:
    level: Trust
    tasks: int
    approved: int
    days: float

    @property
    def approval_rate(self) -> float:
        return self.approved / self.tasks if self.tasks else 0.0


def trust_record(events: Iterable[AuditEvent], now: float) -> TrustRecord:
    """One persona's record. Tasks are decided requests plus actions that ran without one."""
    tasks = approved = 0
    first: float | None = None
    for event in events:
        if event.event == "rejected" and event.detail.startswith("incident"):
            tasks = approved = 0
            first = None
            continue
        counted = event.event in _DECIDED or (event.event == "executed" and event.approval_id is None)
        if not counted or event.action in NO_EVIDENCE:
            continue
        tasks += 1
        approved += event.event in _GOOD or event.approval_id is None
        first = event.at if first is None else first
    days = (now - first) / DAY if first is not None else 0.0
    for level, min_tasks, min_rate, min_days in LEVELS:
        if tasks >= min_tasks and approved / tasks >= min_rate and days >= min_days:
            return TrustRecord(level, tasks, approved, days)
    return TrustRecord(Trust.NOVICE, tasks, approved, days)
