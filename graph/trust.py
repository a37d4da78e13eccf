"""Trust levels from people's decisions: novice, proficient (50 decided requests, 90 % approved and
run well, 7 days), expert (200, 98 %, 30 days). Only what a person decided counts (approvals,
rejections, and failures of what they approved), per persona and per workspace or guild; actions
that needed nobody never do, so trust cannot be farmed with read-only calls. A rejection marked as
an incident starts the count again. storage/approvals.py counts; this says what the counts mean."""

from __future__ import annotations

from dataclasses import dataclass

from graph.policy import Trust
from storage.records import TrustCounts

DAY = 86_400.0
LEVELS = ((Trust.EXPERT, 200, 0.98, 30), (Trust.PROFICIENT, 50, 0.90, 7))


@dataclass(frozen=True)
class TrustRecord:
    level: Trust
    tasks: int
    approved: int
    days: float

    @property
    def approval_rate(self) -> float:
        return self.approved / self.tasks if self.tasks else 0.0


def trust_record(counts: TrustCounts | None, now: float) -> TrustRecord:
    """One persona's record: decided requests, those approved that did not fail, days since the first."""
    if counts is None:
        return TrustRecord(Trust.NOVICE, 0, 0, 0.0)
    tasks = counts.approved + counts.rejected
    approved = max(counts.approved - counts.failed, 0)
    days = (now - counts.first_at) / DAY if counts.first_at is not None else 0.0
    for level, min_tasks, min_rate, min_days in LEVELS:
        if tasks >= min_tasks and approved / tasks >= min_rate and days >= min_days:
            return TrustRecord(level, tasks, approved, days)
    return TrustRecord(Trust.NOVICE, tasks, approved, days)
