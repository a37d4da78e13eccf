"""The supervisor: a task's plan run step by step, as a LangGraph thread per task ("task:<id>").

Each invocation of the task graph does one thing (plan, replan, run the steps that may run now,
settle the steps whose approvals have ended, take the steps people finished, or finish) and its
state, the plan with every step's status, is checkpointed before the next: a task a stop
interrupted resumes from its last checkpoint at start-up. Between invocations the runner
(graph/task_runner.py) starts the approval flows of the steps' actions and reads what people asked
of the task from storage.

A step is a persona turn like any other, after a private note to the assigned persona with the
step's instruction and the results it builds on; steps that need nothing of each other run side by
side, and a failed one is tried again (graph/task_steps.py). A replan is asked by a person
(/task replan), or by the supervisor itself when a step failed for good or a person resumed the
task: the planner then checks whether the rest of the plan still fits, and a plan it changes says
what changed under its steps. A step's whole result is kept as the task's
artifact, and the task's end brings its answer (graph/task_answer.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graph import observe, planner
from graph.approval_flow import outcome
from graph.deps import EngineDeps
from graph.nodes import RoundNodes
from graph.observe import STEP_ATTEMPTS, STEP_FAILURES
from graph.settings import EngineSettings
from graph.task_answer import TaskAnswer, with_outcomes
from graph.task_schedule import (
    all_completed,
    all_ended,
    checked,
    failure_rule,
    plan_change,
    recheck_reason,
    replan_due,
    revision_problem,
    too_many_failed,
)
from graph.task_steps import StepPool
from graph.task_text import outcome_note, render_plan
from graph.tasks import (
    FINAL_APPROVAL,
    Ended,
    Plan,
    Steering,
    Step,
    TaskStatus,
    after_approvals,
    assign_all,
    cancelled,
    capabilities_of,
    grounded,
    handed_in,
    merge_replan,
    people_wait,
    plan_problem,
    ready_steps,
    rejected_required,
    waiting_steps,
)
from personas import Persona
from storage import approvals, channels, task_artifacts, tasks

log = logging.getLogger(__name__)

Batch = dict[str, Any]
StartApprovals = Callable[[list[Batch]], Awaitable[None]]
DONE: tuple[TaskStatus, ...] = ("completed", "failed", "stopped")
DEFAULTS = EngineSettings()


class TaskState(TypedDict):
    task_id: int
    channel_key: str
    thread: str | None
    request: str
    author_name: str
    plan: dict[str, Any] | None
    status: TaskStatus
    note: str
    instruction: str  # a replan asked for, not done yet
    stop: bool
    new_batches: list[Batch]  # the last step's actions waiting for approval
    # What people asked, read from storage before each move (see graph/task_runner.py):
    paused_by: str | None
    taken_by: str | None
    cancelled_by: str | None
    cancel_reason: str
    handed_in: list[dict[str, Any]]  # /task done: step, by, result
    recheck: bool  # a person resumed the task: the planner checks the rest of the plan


Next = Literal["plan", "replan", "step", "settle", "hand_in", "finish", "wait"]


def steering_of(state: TaskState) -> Steering:
    return Steering(
        paused_by=state.get("paused_by"),
        taken_by=state.get("taken_by"),
        cancelled_by=state.get("cancelled_by"),
        cancel_reason=state.get("cancel_reason", ""),
    )


def next_move(state: TaskState, settings: EngineSettings = DEFAULTS, *, undecided: bool = False) -> Next:
    """What the supervisor does next, from the task's state alone; "wait" is no move: the task
    waits for a person (an approval that is not decided yet, a pause, a takeover's /task done).
    `undecided`: every step waiting for approval still has an approval that has not ended."""
    if state["stop"] or state.get("cancelled_by") or state["status"] in DONE:
        return "finish"
    if state["plan"] is None:
        return "plan"
    plan = Plan.model_validate(state["plan"])
    waiting = waiting_steps(plan)
    if waiting and not undecided:
        return "settle"
    if state.get("handed_in"):
        return "hand_in"
    if state["instruction"]:
        return "replan"
    if rejected_required(plan):
        return "finish"  # people said no to a step the task needs: no replan saves it
    paused = state.get("paused_by") is not None or state.get("taken_by") is not None
    if not paused and replan_due(plan, recheck=bool(state.get("recheck")), max_replans=settings.max_replans):
        return "replan"
    if too_many_failed(plan, settings.failure_threshold) or all_completed(plan):
        return "finish"
    if people_wait(plan, steering_of(state)) or (waiting and not ready_steps(plan)):
        return "wait"
    return "step" if ready_steps(plan) else "finish"


class TaskFlow:
    def __init__(self, deps: EngineDeps, nodes: RoundNodes) -> None:
        self.deps = deps
        self.nodes = nodes
        self.answer = TaskAnswer(deps, nodes)
        self._shown: dict[int, str] = {}  # each task's plan message as last shown
        self.steps = StepPool(self)
        # Starts a step's approval flows as soon as it ended (graph/task_runner.py sets it); without
        # it, they go out with the move's new_batches.
        self.start_approvals: StartApprovals | None = None

    async def show_now(self, state: TaskState) -> None:
        """Show the plan as it stands, with what people asked of it (a pause, a takeover, an approval
        it waits for), when that changed how it reads."""
        plan = Plan.model_validate(state["plan"]) if state["plan"] is not None else None
        await self._show(state, plan, state["status"])

    # -- helpers -------------------------------------------------------------------------------

    async def _present(self, channel_key: str) -> list[Persona]:
        ids = await channels.participants(self.deps.db, channel_key)
        return [self.deps.personas[i] for i in ids if i in self.deps.personas]

    def _names(self) -> dict[str, str]:
        return {p.id: p.display_name for p in self.deps.personas.values()}

    async def waiting_for(self, plan: Plan | None) -> dict[int, list[int]]:
        """Each step waiting for approval, with the numbers of its approvals that have not ended."""
        waiting: dict[int, list[int]] = {}
        for step in waiting_steps(plan) if plan else []:
            found = [a for batch in step.batches for a in await approvals.in_batch(self.deps.db, batch)]
            waiting[step.id] = [a.id for a in found if a.status.value not in FINAL_APPROVAL]
        return waiting

    async def _show(self, state: TaskState, plan: Plan | None, status: TaskStatus, note: str = "") -> None:
        """Store the task's plan and status, then show it: the plan message is posted once and edited
        after (not when it would read the same)."""
        task_id = state["task_id"]
        await tasks.save(self.deps.db, task_id, status=status, plan=plan.model_dump_json() if plan else None, note=note)
        if status in DONE and state["status"] not in DONE:  # the task ends with this move: count it on /metrics
            observe.task_ended(status, cancelled=bool(state.get("cancelled_by")))
        record = await tasks.get(self.deps.db, task_id)
        shown_as = record.shown_as if record else None
        steering = steering_of(state)
        if record is not None:  # what people asked since this move began shows at once
            steering = Steering(record.paused_by, record.taken_by, record.cancelled_by, record.cancel_reason)
        text = render_plan(
            task_id, plan, status, self._names(), note, steering=steering, waiting=await self.waiting_for(plan)
        )
        if self._shown.get(task_id) == text and shown_as is not None:
            return
        self._shown[task_id] = text
        try:
            shown = await self.deps.port.show_plan(state["channel_key"], text, state["thread"], shown_as)
        except Exception:
            log.exception("could not show the plan of task %s", task_id)
            return
        if shown != shown_as:
            await tasks.set_shown_as(self.deps.db, task_id, shown)

    async def show_plan(self, state: TaskState, plan: Plan) -> None:
        """Show the running plan as it stands (a step under way, ended, or tried again)."""
        await self._show(state, plan, "running")

    def _ask(self) -> dict[str, float]:
        settings = self.deps.settings
        return {"attempts": settings.model_attempts, "backoff_seconds": settings.backoff_seconds}

    # -- nodes ---------------------------------------------------------------------------------

    async def plan(self, state: TaskState) -> dict[str, Any]:
        present = await self._present(state["channel_key"])
        capabilities = capabilities_of(present)
        max_steps = self.deps.settings.max_task_steps
        await self._show(state, None, "planning")
        if not capabilities:
            return await self._stop_unplanned(state, "nobody here has a capability (see docs/tasks.md: capabilities)")
        model = self.deps.models.planner_model(list(capabilities), max_steps)
        messages = planner.planner_messages(state["request"], state["author_name"], capabilities, max_steps)

        def check(plan: Plan) -> tuple[Plan, str | None]:
            plan = grounded(plan, capabilities)
            return assign_all(plan, present), plan_problem(plan, capabilities, max_steps)

        planned = await planner.ask_for_plan(model, messages, check, **self._ask())  # type: ignore[arg-type]
        if isinstance(planned, str):
            return await self._stop_unplanned(state, planned)
        await self._show(state, planned, "running")
        return {"plan": planned.model_dump(), "status": "running", "new_batches": []}

    async def _stop_unplanned(self, state: TaskState, why: str) -> dict[str, Any]:
        note = f"Task stopped: {why}."
        await self._show(state, None, "failed", note)
        await self.deps.port.notice(state["channel_key"], f"Task #{state['task_id']} stopped: {why}.", state["thread"])
        return {"status": "failed", "note": note, "new_batches": []}

    async def replan(self, state: TaskState) -> dict[str, Any]:
        assert state["plan"] is not None
        old = Plan.model_validate(state["plan"])
        present = await self._present(state["channel_key"])
        capabilities = capabilities_of(present)
        max_steps = self.deps.settings.max_task_steps
        model = self.deps.models.planner_model(list(capabilities), max_steps)
        kept = [s.id for s in old.steps if s.status == "completed"]
        shown = render_plan(state["task_id"], old, "running", self._names())
        automatic = not state["instruction"]  # the supervisor's own check: a step failed, or a person resumed
        if automatic:
            why = recheck_reason(old, recheck=bool(state.get("recheck")))
            messages = planner.recheck_messages(shown, state["request"], why, old, capabilities, max_steps, kept)
        else:
            messages = planner.replan_messages(
                shown, state["request"], state["instruction"], state["author_name"], capabilities, max_steps, kept
            )

        def check(revised: Plan) -> tuple[Plan, str | None]:
            if problem := revision_problem(old, revised, self._names(), redo_allowed=not automatic):
                return revised, problem
            merged = assign_all(merge_replan(old, grounded(revised, capabilities)), present)
            return merged, plan_problem(merged, capabilities, max_steps)

        revised = await planner.ask_for_plan(model, messages, check, **self._ask())  # type: ignore[arg-type]
        if automatic:
            return await self._rechecked(state, old, revised)
        await tasks.clear_instruction(self.deps.db, state["task_id"], state["instruction"])
        if isinstance(revised, str):
            note = f"Task stopped: the replan failed: {revised}."
            await self._show(state, old, "failed", note)
            await self.deps.port.notice(state["channel_key"], f"Task #{state['task_id']} {note[5:]}", state["thread"])
            return {"status": "failed", "note": note, "instruction": "", "new_batches": []}
        await self._show(state, revised, "running")
        return {"plan": revised.model_dump(), "instruction": "", "new_batches": []}

    async def _rechecked(self, state: TaskState, old: Plan, revised: Plan | str) -> dict[str, Any]:
        """The plan after the planner checked it: as it was when the rest still fits (or the planner
        gave no usable plan), else the revised one, saying what changed under its steps."""
        await tasks.set_recheck(self.deps.db, state["task_id"], False)
        seen = checked(old)
        change = plan_change(old, revised) if isinstance(revised, Plan) else ""
        plan = seen
        if isinstance(revised, Plan) and change:
            plan = revised.model_copy(update={"auto_replans": seen.auto_replans, "checked": [], "changed": change})
        await self._show(state, plan, "running")
        return {"plan": plan.model_dump(), "recheck": False, "new_batches": []}

    async def step(self, state: TaskState) -> dict[str, Any]:
        return await self.steps.run(state)

    async def settle(self, state: TaskState) -> dict[str, Any]:
        """Each step whose approvals have all ended completes with what its actions did, is tried
        again (an action failed), or fails with why; the others wait on."""
        assert state["plan"] is not None
        plan = Plan.model_validate(state["plan"])
        for step in waiting_steps(plan):
            found = [a for batch in step.batches for a in await approvals.in_batch(self.deps.db, batch)]
            if any(a.status.value not in FINAL_APPROVAL for a in found):
                continue  # not decided yet
            ended = [Ended(a.id, a.status.value, f"{a.action}: {outcome(a, for_persona=True)}") for a in found]
            plan = after_approvals(plan, step.id, ended, self.deps.settings.step_attempts)
            now = next(s.status for s in plan.steps if s.id == step.id)
            if now == "pending":
                STEP_ATTEMPTS.labels("retried").inc()  # an action failed: the step is tried again
            elif now == "failed":
                STEP_FAILURES.labels("action").inc()
            elif now == "completed":
                kept = (await task_artifacts.of_task(self.deps.db, state["task_id"])).get(step.id)
                reply = kept.text if kept is not None else step.result_summary
                await self.answer.keep(state["task_id"], step.id, step.assignee or "", with_outcomes(reply, ended))
        await self._show(state, plan, "running")
        return {"plan": plan.model_dump(), "new_batches": []}

    async def hand_in(self, state: TaskState) -> dict[str, Any]:
        """The steps people finished (/task done) are completed, credited to them."""
        assert state["plan"] is not None
        plan = Plan.model_validate(state["plan"])
        for given in state["handed_in"]:
            before = plan
            plan = handed_in(plan, int(given["step"]), str(given["by"]), str(given["result"]))
            if plan != before:
                by, result = str(given["by"]), str(given["result"]).strip()
                await self.answer.keep(state["task_id"], int(given["step"]), by, result or f"done by {by}")
        await self._show(state, plan, "running")
        await tasks.clear_handed_in(self.deps.db, state["task_id"], [int(g["step"]) for g in state["handed_in"]])
        return {"plan": plan.model_dump(), "handed_in": [], "new_batches": []}

    def _instruction(self, state: TaskState, plan: Plan, step: Step, results: list[str]) -> tuple[str, str]:
        """The assigned persona's private note (its step, and the whole results of the steps it builds
        on), and what it was asked: the task's request and its step, without those results."""
        names = self._names()
        # Said as the requester asking the persona, last: a small model answers a request it is
        # asked far more often than it carries out an instruction it was told about.
        header = f"Task #{state['task_id']} ({plan.title}), step {step.id} of {len(plan.steps)}."
        earlier = f" Results so far: {'; '.join(results).rstrip('.')}." if results else ""
        if step.last_failure:
            earlier += f" Your last try failed: {step.last_failure.rstrip('.')}."
        instruction = step.instruction.rstrip(".")
        ask = f"{state['author_name']}: {names.get(step.assignee or '', 'you')}, {instruction[:1].lower()}{instruction[1:]}."
        return f"{header}{earlier} {ask}", f"{state['request']} {header} {ask}"

    async def finish(self, state: TaskState) -> dict[str, Any]:
        if state["status"] in DONE:
            return {"new_batches": []}
        plan = Plan.model_validate(state["plan"]) if state["plan"] is not None else None
        names, thresholds = self._names(), self.deps.settings.failure_threshold
        status: TaskStatus = "stopped"
        if by := state.get("cancelled_by"):
            reason = state.get("cancel_reason") or "no reason given"
            withdrawn = await self._withdrawn(plan, by)
            plan = cancelled(plan, f"cancelled: {reason}") if plan else None
            note = f"Cancelled by {by}: {reason}.{withdrawn}" + (f" {outcome_note(plan, names)}" if plan else "")
        elif state["stop"]:
            note = "Stopped (/task stop)." + (f" {outcome_note(plan, names)}" if plan else "")
        elif plan is not None and (all_completed(plan) or (all_ended(plan) and not too_many_failed(plan, thresholds))):
            status, note = "completed", outcome_note(plan, names)
        else:
            assert plan is not None
            status = "failed"
            if (refused := rejected_required(plan)) is not None:
                why = f"required step {refused.id} was rejected ({refused.result_summary})"
            elif too_many_failed(plan, thresholds):
                why = failure_rule(plan, thresholds)
            else:
                why = "no step can run any more"
            note = f"Stopped: {why}. {outcome_note(plan, names)}"

        async def show() -> None:
            await self._show(state, plan, status, note)

        batches = await self.answer.conclude(state, plan, status, note, show)
        return {"status": status, "note": note, "new_batches": batches, "plan": plan.model_dump() if plan else None}

    async def _withdrawn(self, plan: Plan | None, by: str) -> str:
        """The approvals a cancellation rejects (bot/ rejects those still pending once the task ends)."""
        batches = [b for s in (plan.steps if plan else []) for b in s.batches]
        found = [a for batch in batches for a in await approvals.in_batch(self.deps.db, batch)]
        gone = [
            a.id for a in found if a.status.value == "pending" or (a.status.value == "rejected" and a.decided_by == by)
        ]
        return f" Its pending approvals are rejected: {', '.join(f'#{n}' for n in gone)}." if gone else ""


def build_task_graph(flow: TaskFlow, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(TaskState)
    graph.add_node("plan", flow.plan)
    graph.add_node("replan", flow.replan)
    graph.add_node("step", flow.step)
    graph.add_node("settle", flow.settle)
    graph.add_node("hand_in", flow.hand_in)
    graph.add_node("finish", flow.finish)
    moves = ("plan", "replan", "step", "settle", "hand_in", "finish")
    for name in moves:
        graph.add_edge(name, END)

    async def route(state: TaskState) -> str:
        return next_move(state, flow.deps.settings)

    graph.add_conditional_edges(START, route, {name: name for name in moves})
    return graph.compile(checkpointer=checkpointer)
