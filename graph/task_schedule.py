"""How the supervisor runs a plan's steps, as pure functions: which steps start now (side by side,
up to [tasks] max_parallel_steps), how an attempt at a step ends (completed, waiting for approval,
tried again up to [tasks] step_attempts, or failed), when a task has lost too many steps for its
kind ([tasks] failure_threshold), and when the planner checks whether the rest of the plan still
fits ([tasks] max_replans), whether its answer is a plan of the remaining work, with what a
replan changed in words.

graph/task_flow.py and graph/task_steps.py act on these; the plan model is graph/tasks.py's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from graph.task_text import WHO
from graph.tasks import GOES_ON, Plan, Step, block_unreachable, plan_retry, ready_steps, with_step, with_waiting
from storage.tasks import StepRecord

LOST: frozenset[str] = frozenset({"failed", "blocked"})


def running_steps(plan: Plan) -> list[Step]:
    """Steps a persona is working on now: in progress, not waiting for approval."""
    return [s for s in plan.steps if s.status == "in_progress" and not s.batches]


def steps_to_start(plan: Plan, max_parallel: int) -> list[Step]:
    """The ready steps that start now, in plan order: while fewer than `max_parallel` run, each ready
    step whose persona is not on another step (a persona takes one step at a time: its answer to
    one step's note must not be read as another's)."""
    running = running_steps(plan)
    busy = {s.assignee for s in running if s.assignee}
    chosen: list[Step] = []
    for step in ready_steps(plan):
        if len(running) + len(chosen) >= max_parallel:
            break
        if step.assignee is None or step.assignee not in busy:
            chosen.append(step)
            if step.assignee:
                busy.add(step.assignee)
    return chosen


def started(plan: Plan, step_id: int, persona_id: str) -> Plan:
    """A step's next attempt begins: in progress, with its persona, one more attempt counted."""
    steps = [
        s.model_copy(update={"status": "in_progress", "assignee": persona_id, "attempts": s.attempts + 1})
        if s.id == step_id
        else s
        for s in plan.steps
    ]
    return plan.model_copy(update={"steps": steps})


def after_attempt(
    plan: Plan, step_id: int, *, failure: str | None, result: str, batches: Sequence[str], step_attempts: int
) -> Plan:
    """How an attempt ended: completed with its result, or waiting with its actions' batches; when it
    failed, pending again to be tried once more while attempts remain, else failed with why."""
    step = next(s for s in plan.steps if s.id == step_id)
    if failure is not None:
        if step.attempts < step_attempts:
            return plan_retry(plan, step_id, failure)
        return with_step(plan, step_id, "failed", failure)
    if batches:
        return with_waiting(plan, step_id, batches, result)
    return with_step(plan, step_id, "completed", result)


def with_records(plan: Plan, records: Sequence[StepRecord]) -> Plan:
    """The plan with what its steps' stored attempts say (a crash cut a move short after they were
    stored): an attempt that ended stands as it ended; one that began and did not end is in progress
    again, to run on from its note. Records of another revision of the plan, or older than what the
    plan knows, change nothing."""
    known = {s.id: s for s in plan.steps}
    steps = dict(known)
    for record in records:
        step = known.get(record.step_id)
        if record.revision != plan.revision or step is None or record.attempt < step.attempts:
            continue
        stored = Step.model_validate_json(record.step)
        if record.attempt == step.attempts and step.status != "in_progress":
            continue  # the plan already took this attempt's end
        steps[step.id] = stored
    return block_unreachable(plan.model_copy(update={"steps": [steps[s.id] for s in plan.steps]}))


def too_many_failed(plan: Plan, thresholds: Mapping[str, float] | None = None) -> bool:
    """The share of steps that failed, or were blocked by a failure, is above the threshold of the
    plan's kind ([tasks] failure_threshold); with no kind (or none set for it), more than half."""
    lost = sum(1 for step in plan.steps if step.status in LOST)
    threshold = (thresholds or {}).get(plan.kind or "")
    if threshold is None:
        return lost * 2 > len(plan.steps)
    return lost > threshold * len(plan.steps)


def failure_rule(plan: Plan, thresholds: Mapping[str, float] | None = None) -> str:
    """The rule too_many_failed applied, in words."""
    threshold = (thresholds or {}).get(plan.kind or "")
    if threshold is None:
        return "more than half of its steps failed"
    if threshold == 0:
        return f"a step failed (an {plan.kind} task allows none)"
    return f"more than {threshold:.0%} of its steps failed (the limit for a {plan.kind} task)"


def all_completed(plan: Plan) -> bool:
    """Every step completed, or skipped: the task is done."""
    return all(step.status in GOES_ON for step in plan.steps)


def all_ended(plan: Plan) -> bool:
    """Every step completed, failed or blocked: nothing is left to run or wait for."""
    return all(step.status in LOST or step.status in GOES_ON for step in plan.steps)


def replan_due(plan: Plan, *, recheck: bool, max_replans: int) -> bool:
    """Whether the planner checks the rest of the plan now: a step failed for good or was blocked
    since it last looked, or a person resumed the task; at most `max_replans` times a task, and only
    while steps remain."""
    remaining = any(s.status not in LOST and s.status not in GOES_ON for s in plan.steps)
    unseen = any(s.status in LOST and s.id not in plan.checked for s in plan.steps)
    return plan.auto_replans < max_replans and (unseen or (recheck and remaining))


def revision_problem(old: Plan, revised: Plan, names: Mapping[str, str], *, redo_allowed: bool) -> str | None:
    """What makes the planner's revised steps no plan of the remaining work, as one line for it to
    fix (None: they are): two steps with one id; a step that copies a line of the plan message it
    was shown ("Write the tagline — Nova: ..."); or, unless a person asked for the change (they may
    want a step done again), a step that is a completed one again. The embedded model answers its
    own check after a failure with both."""
    ids = [step.id for step in revised.steps]
    if len(set(ids)) < len(ids):
        return "two steps share an id"
    completed = [step for step in old.steps if step.status == "completed"]
    for step in revised.steps:
        if copies_plan_line(step.title, names.values()) or copies_plan_line(step.instruction, names.values()):
            return f"step {step.id} copies a line of the plan message; give it a short title of its own"
        done = next((c for c in completed if same_title(c.title, step.title)), None)
        if done is not None and not redo_allowed:
            return f"step {step.id} ({step.title}) repeats completed step {done.id}; plan only the remaining work"
    return None


def copies_plan_line(text: str, names: Iterable[str]) -> bool:
    """Whether `text` holds a step's line of the plan message as render_plan writes it: its title,
    then who has it ("Write the tagline — Nova: ..." or "— Rex (after 2)")."""
    who = "|".join(re.escape(name) for name in names if name)
    return bool(who) and re.search(rf"{WHO}(?:{who})(?:$|:| \(after )", text, re.MULTILINE) is not None


def same_title(left: str, right: str) -> bool:
    """Whether two step titles name the same step (case, spacing and a closing full stop aside)."""

    def key(title: str) -> str:
        return " ".join(title.casefold().strip(" .!").split())

    return key(left) == key(right)


def checked(plan: Plan) -> Plan:
    """The plan after the planner looked at it: one more automatic replan counted, its failures seen."""
    seen = [s.id for s in plan.steps if s.status in LOST]
    return plan.model_copy(update={"auto_replans": plan.auto_replans + 1, "checked": seen})


def recheck_reason(plan: Plan, *, recheck: bool) -> str:
    """Why the planner is asked to check the plan, in words: the steps that failed or were blocked
    since it last looked (with why), or a person resuming the task."""
    lost = [
        f"step {s.id} ({s.title}) {s.status}" + (f": {s.result_summary}" if s.result_summary else "")
        for s in plan.steps
        if s.status in LOST and s.id not in plan.checked
    ]
    if lost:
        return "; ".join(lost)
    return "the task was paused or taken over, and has just been resumed" if recheck else "the plan may have changed"


def _same(one: Step, other: Step) -> bool:
    return (one.title, one.instruction, one.capability) == (other.title, other.instruction, other.capability)


def plan_change(old: Plan, new: Plan) -> str:
    """What a replan changed in the steps still to do, in one line ("" when nothing): each step
    replaced, dropped or added, in order."""
    before = [s for s in old.steps if s.status not in GOES_ON]
    after = [s for s in new.steps if s.status not in GOES_ON]
    parts: list[str] = []
    for index in range(max(len(before), len(after))):
        was = before[index] if index < len(before) else None
        now = after[index] if index < len(after) else None
        if was is not None and now is not None and not _same(was, now):
            parts.append(f"step {was.id} replaced by {now.id}. {now.title}")
        elif was is not None and now is None:
            parts.append(f"step {was.id} dropped")
        elif was is None and now is not None:
            parts.append(f"step {now.id} added: {now.title}")
    return f"Plan changed: {'; '.join(parts)}." if parts else ""
