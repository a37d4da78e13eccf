"""Task plans and their rules, as pure functions: validation, who takes a step, what runs next,
when a task stops, how a revised plan keeps the finished work, and how a plan reads in the channel.

A step's status is pending, in_progress, completed, blocked (a step it depends on failed or was
blocked, so it can never run), failed (its persona's turn failed, or an action it asked for was
not carried out) or skipped (an optional step whose action was rejected: the steps after it run as
if it had completed). A step whose actions wait for approval stays in_progress, with their batches,
until every one of them has ended; a required step whose action was rejected fails the task; a
failed step may be tried again (graph/task_schedule.py: steps side by side, retries, thresholds,
the planner's own checks). graph/task_flow.py runs the plan with these rules; what people ask of a
running task is `Steering`; how a plan reads in the channel is graph/task_text.py's.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from personas import Persona

StepStatus = Literal["pending", "in_progress", "completed", "blocked", "failed", "skipped"]
TaskStatus = Literal["planning", "running", "completed", "failed", "stopped"]
TASK_KINDS: tuple[str, ...] = ("research", "writing", "actions")
FINISHED_STEP: frozenset[str] = frozenset({"completed", "blocked", "failed", "skipped"})
GOES_ON: frozenset[str] = frozenset({"completed", "skipped"})  # the steps after it may run
SUMMARY_CHARS = 100

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


PLANNED_FIELDS = ("id", "title", "instruction", "capability", "depends_on", "optional")
"""What the planner gives a step (graph/planner.py's plan_schema); the rest is the task's own record."""


class Step(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int = Field(ge=1)
    title: Text
    instruction: Text
    capability: Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1)]
    depends_on: list[int] = Field(default_factory=list)
    optional: bool = False  # a rejected optional step is skipped; a rejected required one fails the task
    status: StepStatus = "pending"
    result_summary: str = ""
    assignee: str | None = None  # a persona id, set by assign()
    batches: list[str] = Field(default_factory=list)  # its actions' approval batches, while they wait
    done_by: str | None = None  # the person who did it (/task done), instead of its assignee
    rejected: bool = False  # a required step failed because a person rejected its action
    attempts: int = 0  # attempts begun ([tasks] step_attempts)
    last_failure: str = ""  # why the last attempt failed, told to the persona on the next


class Plan(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: Text
    steps: list[Step]
    kind: str | None = None  # research, writing or actions (the planner's): it picks the failure threshold
    revision: int = 0  # replans so far: a step's record belongs to one revision
    auto_replans: int = 0  # times the planner checked the plan on its own ([tasks] max_replans)
    checked: list[int] = Field(default_factory=list)  # failed or blocked steps the planner has seen
    changed: str = ""  # what the last automatic replan changed, shown under the steps


def parse_plan(text: str) -> Plan | str:
    """The plan in a planner's JSON reply, its steps holding only PLANNED_FIELDS (pending, unassigned,
    done by nobody, waiting on no approval); else what is wrong, one line."""
    try:
        plan = Plan.model_validate_json(_json_part(text))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "json_invalid":
            return "the reply is not a JSON object"
        return f"{where}: {error['msg']}" if where else str(error["msg"])
    fresh = [Step.model_validate(step.model_dump(include=set(PLANNED_FIELDS))) for step in plan.steps]
    return Plan(title=plan.title, kind=plan.kind if plan.kind in TASK_KINDS else None, steps=fresh)


def _json_part(text: str) -> str:
    """The JSON object in a reply, without a Markdown fence around it."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def plan_problem(plan: Plan, capabilities: Collection[str], max_steps: int) -> str | None:
    """What makes the plan unusable, as one line for the planner to fix; None when it is fine."""
    if not plan.steps:
        return "the plan has no steps"
    if len(plan.steps) > max_steps:
        return f"the plan has {len(plan.steps)} steps; the most is {max_steps}"
    ids = [step.id for step in plan.steps]
    if duplicate := next((i for i in ids if ids.count(i) > 1), None):
        return f"step id {duplicate} is used twice"
    known = ", ".join(sorted(capabilities)) or "none"
    for step in plan.steps:
        if step.capability not in capabilities:
            return f"step {step.id} needs capability {step.capability!r}, which nobody here has (known: {known})"
        if missing := next((d for d in step.depends_on if d not in ids), None):
            return f"step {step.id} depends on step {missing}, which is not in the plan"
    if cycle := dependency_cycle(plan):
        return "steps " + " -> ".join(str(i) for i in cycle) + " depend on each other in a cycle"
    return None


def dependency_cycle(plan: Plan) -> list[int] | None:
    """A cycle of step ids (first id repeated at the end), or None."""
    needs = {step.id: step.depends_on for step in plan.steps}
    done: set[int] = set()

    def visit(step_id: int, path: list[int]) -> list[int] | None:
        if step_id in path:
            return path[path.index(step_id) :] + [step_id]
        if step_id in done or step_id not in needs:
            return None
        for dependency in needs[step_id]:
            if cycle := visit(dependency, [*path, step_id]):
                return cycle
        done.add(step_id)
        return None

    for step_id in needs:
        if cycle := visit(step_id, []):
            return cycle
    return None


def capabilities_of(personas: Sequence[Persona]) -> dict[str, list[str]]:
    """Each capability of the personas present, with the display names of those who have it."""
    found: dict[str, list[str]] = {}
    for persona in personas:
        for capability in persona.capabilities:
            found.setdefault(capability, []).append(persona.display_name)
    return found


def assign(step: Step, personas: Sequence[Persona]) -> Persona | None:
    """Who takes a step: the first persona present (in channel order) with the step's capability."""
    return next((p for p in personas if step.capability in p.capabilities), None)


def assign_all(plan: Plan, personas: Sequence[Persona]) -> Plan:
    """Unfinished steps go to whoever may take them now; a finished step keeps its assignee."""
    steps = []
    for step in plan.steps:
        if step.status not in FINISHED_STEP:
            taker = assign(step, personas)
            step = step.model_copy(update={"assignee": taker.id if taker else None})
        steps.append(step)
    return plan.model_copy(update={"steps": steps})


def ready_steps(plan: Plan) -> list[Step]:
    """The pending steps whose dependencies are all completed (or skipped), in plan order."""
    completed = {step.id for step in plan.steps if step.status in GOES_ON}
    return [s for s in plan.steps if s.status == "pending" and all(d in completed for d in s.depends_on)]


def next_runnable(plan: Plan) -> Step | None:
    """The first pending step whose dependencies are all completed (or skipped)."""
    return next(iter(ready_steps(plan)), None)


def with_step(plan: Plan, step_id: int, status: StepStatus, result_summary: str | None = None) -> Plan:
    """The plan with one step's status (and summary) changed, then every step that can no longer run blocked."""
    steps = [
        s.model_copy(
            update={"status": status, "result_summary": s.result_summary if result_summary is None else result_summary}
        )
        if s.id == step_id
        else s
        for s in plan.steps
    ]
    return block_unreachable(plan.model_copy(update={"steps": steps}))


def block_unreachable(plan: Plan) -> Plan:
    """Pending steps that depend on a failed or blocked step become blocked."""
    steps = list(plan.steps)
    changed = True
    while changed:
        changed = False
        dead = {s.id for s in steps if s.status in ("failed", "blocked")}
        for index, step in enumerate(steps):
            if step.status == "pending" and (lost := [d for d in step.depends_on if d in dead]):
                steps[index] = step.model_copy(
                    update={"status": "blocked", "result_summary": f"step {lost[0]} did not finish"}
                )
                changed = True
    return plan.model_copy(update={"steps": steps})


def rejected_required(plan: Plan) -> Step | None:
    """The required step whose action a person rejected: the task fails with it."""
    return next((s for s in plan.steps if s.rejected and s.status == "failed"), None)


def merge_replan(old: Plan, revised: Plan) -> Plan:
    """The completed steps of the old plan, then the revised remaining steps, numbered after them.

    A revised step's dependency on another revised step follows that step's new number; a
    dependency on a completed step stays as it is (and on anything else, for plan_problem to name).
    """
    kept = [step for step in old.steps if step.status == "completed"]
    first_new = max((step.id for step in kept), default=0) + 1
    renumbered = {step.id: first_new + index for index, step in enumerate(revised.steps)}
    new_steps = [
        step.model_copy(
            update={
                "id": renumbered[step.id],
                "depends_on": [renumbered.get(d, d) for d in step.depends_on],
                "status": "pending",
                "result_summary": "",
            }
        )
        for step in revised.steps
    ]
    merged = Plan(title=revised.title, steps=[*kept, *new_steps], kind=revised.kind or old.kind)
    return merged.model_copy(update={"revision": old.revision + 1, "auto_replans": old.auto_replans})


def summary_of(reply: str, limit: int = SUMMARY_CHARS) -> str:
    """A persona's reply shortened to one line for the plan."""
    text = " ".join(reply.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def words_of(text: str) -> set[str]:
    """A text's words, casefolded, with their apostrophes ("let's")."""
    return set(re.findall(r"[a-z0-9']+", text.casefold()))


def _stem(capability: str) -> str:
    # "writing" is asked for as "write", "analysis" as "analyse", "announcements" as "announce".
    return capability.casefold()[:4]


def grounded(plan: Plan, capabilities: Collection[str]) -> Plan:
    """The plan with each step's capability taken from its own words when they name exactly one
    capability ("Write the invitation" -> writing), whatever the planner picked. A small model
    splits a request well but labels the parts poorly; the words it copied from the request do not lie."""
    stems = {_stem(c): c for c in capabilities if len(c) >= 4}

    def named(step: Step) -> str | None:
        found = {stems[word[:4]] for word in words_of(f"{step.title} {step.instruction}") if word[:4] in stems}
        return found.pop() if len(found) == 1 else None

    return plan.model_copy(
        update={"steps": [s.model_copy(update={"capability": named(s) or s.capability}) for s in plan.steps]}
    )


# -- people steering a task, and steps that wait for their approvals ---------------------------------

FINAL_APPROVAL: frozenset[str] = frozenset({"executed", "failed", "rejected", "expired", "unknown"})


@dataclass(frozen=True)
class Steering:
    """What people asked of a running task, as stored: who paused it, who took over its remaining
    steps, and who cancelled it (with why)."""

    paused_by: str | None = None
    taken_by: str | None = None
    cancelled_by: str | None = None
    cancel_reason: str = ""


@dataclass(frozen=True)
class Ended:
    """How one approval a step waited for ended: its number, status and the outcome in words."""

    approval_id: int
    status: str
    outcome: str


def waiting_steps(plan: Plan) -> list[Step]:
    """The steps whose actions wait for approval (each stays in progress until they have ended)."""
    return [s for s in plan.steps if s.status == "in_progress" and s.batches]


def with_waiting(plan: Plan, step_id: int, batches: Sequence[str], reply_summary: str) -> Plan:
    """The step keeps going after its persona's turn: its actions wait for approval."""
    return plan.model_copy(
        update={
            "steps": [
                s.model_copy(update={"batches": list(batches), "result_summary": reply_summary})
                if s.id == step_id
                else s
                for s in plan.steps
            ]
        }
    )


def after_approvals(plan: Plan, step_id: int, ended: Sequence[Ended], step_attempts: int = 1) -> Plan:
    """The step whose approvals have all ended: completed, with what its actions did, when every
    one was carried out. A rejection skips an optional step (the steps after it run) and fails a
    required one, marked `rejected` (the task fails: rejected_required). An action that failed when
    run makes the step try again while it has attempts left ([tasks] step_attempts); any other end
    (expired, failed, unknown) fails the step with why, and its dependents are blocked."""
    step = next(s for s in plan.steps if s.id == step_id)
    refused = next((e for e in ended if e.status == "rejected"), None)
    lost = refused or next((e for e in ended if e.status != "executed"), None)
    cleared = plan.model_copy(
        update={
            "steps": [
                s.model_copy(update={"batches": [], "rejected": refused is not None and not s.optional})
                if s.id == step_id
                else s
                for s in plan.steps
            ]
        }
    )
    if lost is not None:
        why = summary_of(f"approval #{lost.approval_id}: {lost.outcome}")
        if refused is not None and step.optional:
            return with_step(cleared, step_id, "skipped", summary_of(f"skipped (optional): {why}"))
        if lost.status == "failed" and step.attempts < step_attempts:
            return plan_retry(cleared, step_id, why)
        return with_step(cleared, step_id, "failed", why)
    done = "; ".join(e.outcome for e in ended)
    result = f"{step.result_summary} ({done})" if step.result_summary else done
    return with_step(cleared, step_id, "completed", summary_of(result, 2 * SUMMARY_CHARS))


def plan_retry(plan: Plan, step_id: int, why: str) -> Plan:
    """The step goes back to pending, to be tried again, with why its last attempt failed."""
    retry = {"status": "pending", "last_failure": why, "result_summary": ""}
    return plan.model_copy(update={"steps": [s.model_copy(update=retry) if s.id == step_id else s for s in plan.steps]})


def why_not_hand_in(plan: Plan | None, step_id: int) -> str | None:
    """Why a person may not mark this step done (None: they may)."""
    if plan is None:
        return "the task has no plan yet"
    step = next((s for s in plan.steps if s.id == step_id), None)
    if step is None:
        return f"it has no step {step_id}"
    if step.status == "in_progress":
        return f"step {step_id} is under way"
    if step.status != "pending":
        return f"step {step_id} is {step.status} already"
    return None


def handed_in(plan: Plan, step_id: int, by: str, result: str) -> Plan:
    """A step a person finished: completed, credited to them, with what they said they did."""
    if why_not_hand_in(plan, step_id) is not None:
        return plan
    plan = plan.model_copy(
        update={"steps": [s.model_copy(update={"done_by": by}) if s.id == step_id else s for s in plan.steps]}
    )
    return with_step(plan, step_id, "completed", summary_of(result) if result.strip() else f"done by {by}")


def people_wait(plan: Plan, steering: Steering) -> bool:
    """No step goes to a persona now: the task is paused, or a person took over and steps remain."""
    remaining = any(s.status == "pending" for s in plan.steps)
    return steering.paused_by is not None or (steering.taken_by is not None and remaining)


def cancelled(plan: Plan, reason: str) -> Plan:
    """A cancelled task's step under way (or waiting for approval) fails with the cancellation (it
    keeps its batches: their approvals are rejected with it)."""
    steps = [
        s.model_copy(update={"status": "failed", "result_summary": reason}) if s.status == "in_progress" else s
        for s in plan.steps
    ]
    return plan.model_copy(update={"steps": steps})
