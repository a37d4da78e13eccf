"""How a task reads, as pure functions: the plan message (each step's mark, who has it, what it
waits for, how it ended), the one-line outcome that credits who did what, and the context a person
who takes a task over is handed privately."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graph.tasks import Plan, Steering, Step, TaskStatus

MARKS: Mapping[str, str] = {
    "pending": "[ ]",
    "in_progress": "[>]",
    "completed": "[x]",
    "blocked": "[-]",
    "failed": "[!]",
    "skipped": "[~]",
}

NO_STEERING = Steering()
WHO = " — "  # between a step's title and who has it, in each line of the plan message


def render_plan(
    task_id: int,
    plan: Plan | None,
    status: TaskStatus,
    names: Mapping[str, str],
    note: str = "",
    *,
    steering: Steering = NO_STEERING,
    waiting: Mapping[int, Sequence[int]] | None = None,
) -> str:
    """The plan as the channel sees it: a title line (with who paused or took over a running task),
    one line per step (mark, number, title, who has it, what it waits for or its short result), and
    how the task ended when it did. `waiting`: each waiting step's approval numbers."""
    shown = _shown_status(status, steering)
    if plan is None:
        head = f"Task #{task_id} ({shown})"
        return f"{head}\n{note}" if note else head
    lines = [f"Task #{task_id}: {plan.title} ({shown})"]
    for step in plan.steps:
        after = f" (after {', '.join(str(d) for d in step.depends_on)})" if step.depends_on else ""
        numbers = (waiting or {}).get(step.id, [])
        if numbers and step.status == "in_progress":
            result = ": waiting for approval " + ", ".join(f"#{n}" for n in numbers)
        else:
            result = f": {step.result_summary}" if step.result_summary else ""
        lines.append(f"{MARKS[step.status]} {step.id}. {step.title}{WHO}{_who(step, names, steering)}{after}{result}")
    if plan.changed:
        lines.append(plan.changed)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _shown_status(status: TaskStatus, steering: Steering) -> str:
    if status not in ("planning", "running"):
        return status
    parts = [f"paused by {steering.paused_by}"] if steering.paused_by else []
    if steering.taken_by:
        parts.append(f"taken over by {steering.taken_by}")
    return ", ".join(parts) or status


def _who(step: Step, names: Mapping[str, str], steering: Steering) -> str:
    if step.done_by:
        return step.done_by
    if steering.taken_by and step.status == "pending":
        return f"with {steering.taken_by}"
    return names.get(step.assignee or "", step.assignee or "nobody")


def outcome_note(plan: Plan, names: Mapping[str, str] | None = None) -> str:
    """How a finished task ended, in one line; when people did steps, who did which."""
    total = len(plan.steps)
    done = sum(1 for s in plan.steps if s.status == "completed")
    failed = sum(1 for s in plan.steps if s.status == "failed")
    blocked = sum(1 for s in plan.steps if s.status == "blocked")
    skipped = sum(1 for s in plan.steps if s.status == "skipped")
    if done == total:
        told = f"Done: all {total} steps completed."
    elif done + skipped == total:
        told = f"Done: {done} of {total} steps completed, {skipped} optional skipped."
    else:
        parts = [f"{done} of {total} steps completed", f"{failed} failed"]
        if blocked:
            parts.append(f"{blocked} blocked")
        if skipped:
            parts.append(f"{skipped} optional skipped")
        told = ", ".join(parts) + "."
    return told + credits(plan, names or {})


def credits(plan: Plan, names: Mapping[str, str]) -> str:
    """ " Who did what: Sage 1; Ana 2, 3." when a person did any step; else nothing."""
    if not any(s.done_by for s in plan.steps):
        return ""
    doers: dict[str, list[int]] = {}
    for step in plan.steps:
        if step.status == "completed":
            who = step.done_by or names.get(step.assignee or "", step.assignee or "nobody")
            doers.setdefault(who, []).append(step.id)
    return " Who did what: " + "; ".join(f"{who} {', '.join(map(str, ids))}" for who, ids in doers.items()) + "."


def handover(task_id: int, request: str, plan: Plan | None, names: Mapping[str, str]) -> str:
    """What a person who takes the task over is handed: the request, the completed steps' results,
    and the remaining steps with their instructions."""
    lines = [f"You have task #{task_id} now. The request: {request}"]
    if plan is None:
        return "\n".join([*lines, "It is still being planned: /task status shows its steps once they are ready."])
    done = [s for s in plan.steps if s.status == "completed"]
    if done:
        lines.append("Done so far:")
        lines += [f"- {s.id}. {s.title} ({_who(s, names, NO_STEERING)}): {s.result_summary}" for s in done]
    under_way = [s for s in plan.steps if s.status == "in_progress"]
    lines += [f"Under way: {s.id}. {s.title} ({_who(s, names, NO_STEERING)} finishes it)" for s in under_way]
    left = [s for s in plan.steps if s.status == "pending"]
    if left:
        lines.append("Left to you (/task done N [result] as you finish each):")
        for step in left:
            after = f" (after {', '.join(str(d) for d in step.depends_on)})" if step.depends_on else ""
            lines.append(f"- {step.id}. {step.title}{after}: {step.instruction}")
    return "\n".join(lines)
