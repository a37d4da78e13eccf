"""Trust levels from what people decided and what tasks delivered: new, proficient, expert.

Two counts, per persona and per workspace or guild, both since the persona's last incident (a
rejection marked as one starts them again):
- people's decisions on its requests (approvals, rejections, and failures of what they approved),
  counted by storage/trust.py; actions that needed nobody never count, so trust cannot be farmed
  with read-only calls;
- its task steps, counted here from the plans of the tasks that ended: a step it completed in a task
  that completed is a finished task; a step it failed for good (after its retries, in a task that
  completed or failed) is a failed one. A step a person did (/task done), a blocked step, and every
  step of a task people stopped or cancelled count for nobody; a task someone asked to roll back
  (/task cancel rollback, after it ended too) counts as cancelled, except that its failed steps
  still count as failed.

Each level asks for all of BARS' figures; `next_level` says what a persona lacks for the next.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from graph.policy import Trust
from graph.tasks import Plan
from storage.records import EndedTask, TrustCounts

DAY = 86_400.0


@dataclass(frozen=True)
class Bar:
    """What a level asks: decided requests and the share approved (and not failed), finished tasks and
    the share of task steps that did not fail, and days since the first counted decision or task."""

    level: Trust
    decided: int
    approved_share: float
    finished: int
    finished_share: float
    days: int


BARS = (Bar(Trust.EXPERT, 200, 0.98, 20, 0.95, 30), Bar(Trust.PROFICIENT, 50, 0.90, 5, 0.80, 7))
"""Highest first: a persona is at the first level whose bar it clears."""


@dataclass(frozen=True)
class TaskCounts:
    finished: int = 0
    failed: int = 0
    first_at: float | None = None  # when the first counted task ended


@dataclass(frozen=True)
class TrustRecord:
    level: Trust
    decided: int = 0
    approved: int = 0  # approved and not failed
    finished: int = 0
    failed: int = 0
    days: float = 0.0

    @property
    def approval_rate(self) -> float:
        return self.approved / self.decided if self.decided else 0.0


def task_counts(ended: Iterable[EndedTask], persona_id: str, since: float | None = None) -> TaskCounts:
    """The persona's finished and failed task steps in the tasks that ended after `since` (its last incident)."""
    finished = failed = 0
    first_at: float | None = None
    for task in ended:
        if task.plan is None or task.status not in ("completed", "failed") or (since and task.ended_at <= since):
            continue
        try:
            plan = Plan.model_validate_json(task.plan)
        except ValueError:
            continue  # a plan this version cannot read counts for nobody
        mine = [s for s in plan.steps if s.assignee == persona_id and s.done_by is None]
        # A rolled-back task is cancelled for trust: its completed steps earn nothing; a step that
        # failed for good still counts, so a rollback never clears a failure.
        earns = task.status == "completed" and not task.rolled_back
        done = sum(1 for s in mine if s.status == "completed") if earns else 0
        lost = sum(1 for s in mine if s.status == "failed")
        if done or lost:
            finished, failed = finished + done, failed + lost
            first_at = task.ended_at if first_at is None else min(first_at, task.ended_at)
    return TaskCounts(finished, failed, first_at)


def trust_record(counts: TrustCounts | None, now: float, tasks: TaskCounts | None = None) -> TrustRecord:
    """One persona's record and level from its people's decisions and its task steps."""
    tasks = tasks or TaskCounts()
    decided = counts.approved + counts.rejected if counts else 0
    approved = max(counts.approved - counts.failed, 0) if counts else 0
    starts = [at for at in (counts.first_at if counts else None, tasks.first_at) if at is not None]
    days = (now - min(starts)) / DAY if starts else 0.0
    record = TrustRecord(Trust.NEW, decided, approved, tasks.finished, tasks.failed, days)
    for bar in BARS:
        if not _lacking(record, bar):
            return TrustRecord(bar.level, decided, approved, tasks.finished, tasks.failed, days)
    return record


def _more_for_share(good: int, total: int, share: float) -> int:
    """How many more good outcomes in a row bring good/total to `share`."""
    more = max(0, math.ceil((share * total - good) / (1 - share) - 1e-9))
    while more > 0 and (good + more - 1) >= share * (total + more - 1):
        more -= 1
    while (good + more) < share * (total + more):
        more += 1
    return more


def _lacking(record: TrustRecord, bar: Bar) -> list[str]:
    """What the record lacks for the bar, one phrase a figure; empty when it clears it."""
    lacking = []
    by_count = bar.decided - record.decided
    by_share = _more_for_share(record.approved, record.decided, bar.approved_share)
    if by_share > max(by_count, 0):
        lacking.append(_more(by_share, "approved request"))
    elif by_count > 0:
        lacking.append(_more(by_count, "decided request"))
    steps = record.finished + record.failed
    by_count = bar.finished - record.finished
    by_share = _more_for_share(record.finished, steps, bar.finished_share)
    if max(by_count, by_share) > 0:
        lacking.append(_more(max(by_count, by_share), "finished task"))
    days = math.ceil(bar.days - record.days - 1e-9)
    if days > 0:
        lacking.append(_more(days, "day"))
    return lacking


def _more(count: int, what: str) -> str:
    return f"{count} more {_counted(count, what)}"


def _counted(count: int, what: str) -> str:
    return f"{what}{'' if count == 1 else 's'}"


def figures(record: TrustRecord) -> str:
    """The record as /trust shows it: "new (4 decided by people, 75% approved, 1 finished task, 0 failed, 2 days)"."""
    return (
        f"{record.level} ({record.decided} decided by people, {record.approval_rate:.0%} approved, "
        f"{record.finished} {_counted(record.finished, 'finished task')}, {record.failed} failed, "
        f"{record.days:.0f} {_counted(round(record.days), 'day')})"
    )


def next_level(record: TrustRecord) -> str:
    """What the persona needs for the next level, e.g. "12 more decided requests, 2 more finished
    tasks and 5 more days to reach proficient"; for an expert, that it is at the top."""
    above = [bar for bar in reversed(BARS) if _rank(bar.level) > _rank(record.level)]
    if not above:
        return "the highest level"
    lacking = _lacking(record, above[0])
    listed = ", ".join(lacking[:-1]) + (" and " if len(lacking) > 1 else "") + lacking[-1]
    return f"{listed} to reach {above[0].level}"


def _rank(level: Trust) -> int:
    return list(Trust).index(level)
