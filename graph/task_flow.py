"""The supervisor: a task's plan run step by step, as a LangGraph thread per task ("task:<id>").

Each invocation of the task graph does one thing (plan, replan, run the next step, settle a step
whose approvals have ended, take the steps people finished, or finish) and its state, the plan
with every step's status, is checkpointed before the next: a task a stop interrupted resumes from
its last checkpoint at start-up. Between invocations the runner (graph/task_runner.py) starts the
approval flows of the step's actions and reads what people asked of the task from storage.

A step is a persona turn like any other (RoundNodes.turn: draft, review, deliver or skip), after a
private note to the assigned persona with the step's instruction and the results it builds on. The
note and the step's start are stored together; a step begun before (a stop cut it short) takes the
persona's committed answer to that note, if there is one, rather than running the turn again, so
nothing of a step is posted twice. A step's whole result is kept as the task's artifact, and the
task's end brings its answer (graph/task_answer.py).
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
from graph.state import Floor, RoundInput
from graph.task_answer import TaskAnswer, step_inputs, with_outcomes
from graph.task_text import outcome_note, render_plan
from graph.tasks import (
    FINAL_APPROVAL,
    Ended,
    Plan,
    Steering,
    Step,
    TaskStatus,
    after_approvals,
    all_completed,
    assign,
    assign_all,
    cancelled,
    capabilities_of,
    copied_result,
    grounded,
    handed_in,
    merge_replan,
    next_runnable,
    only_repeats,
    people_wait,
    plan_problem,
    rejected_required,
    summary_of,
    too_many_failed,
    waiting_step,
    with_step,
    with_waiting,
)
from personas import Persona
from storage import approvals, channels, task_artifacts, tasks
from storage.records import TaskStep

log = logging.getLogger(__name__)

Batch = dict[str, Any]
StartApprovals = Callable[[list[Batch]], Awaitable[None]]
DONE: tuple[TaskStatus, ...] = ("completed", "failed", "stopped")
# A step is a round of one turn; a failed turn is the task's to count, not a stopped round's.
STEP_PLANNED_TURNS = 2


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


Next = Literal["plan", "replan", "step", "settle", "hand_in", "finish", "wait"]


def steering_of(state: TaskState) -> Steering:
    return Steering(
        paused_by=state.get("paused_by"),
        taken_by=state.get("taken_by"),
        cancelled_by=state.get("cancelled_by"),
        cancel_reason=state.get("cancel_reason", ""),
    )


def next_move(state: TaskState, *, undecided: bool = False) -> Next:
    """What the supervisor does next, from the task's state alone; "wait" is no move: the task
    waits for a person (an approval that is not decided yet, a pause, a takeover's /task done)."""
    if state["stop"] or state.get("cancelled_by") or state["status"] in DONE:
        return "finish"
    if state["plan"] is None:
        return "plan"
    plan = Plan.model_validate(state["plan"])
    if waiting_step(plan) is not None:
        return "wait" if undecided else "settle"
    if state.get("handed_in"):
        return "hand_in"
    if state["instruction"]:
        return "replan"
    if too_many_failed(plan) or all_completed(plan) or rejected_required(plan):
        return "finish"
    if people_wait(plan, steering_of(state)):
        return "wait"
    return "finish" if next_runnable(plan) is None else "step"


async def _route(state: TaskState) -> str:
    return next_move(state)


class TaskFlow:
    def __init__(self, deps: EngineDeps, nodes: RoundNodes) -> None:
        self.deps = deps
        self.nodes = nodes
        self.answer = TaskAnswer(deps, nodes)
        self._shown: dict[int, str] = {}  # each task's plan message as last shown

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
        step = waiting_step(plan) if plan else None
        if step is None:
            return {}
        found = [a for batch in step.batches for a in await approvals.in_batch(self.deps.db, batch)]
        return {step.id: [a.id for a in found if a.status.value not in FINAL_APPROVAL]}

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
        messages = planner.replan_messages(
            render_plan(state["task_id"], old, "running", self._names()),
            state["request"],
            state["instruction"],
            state["author_name"],
            capabilities,
            max_steps,
            kept,
        )

        def check(revised: Plan) -> tuple[Plan, str | None]:
            ids = [s.id for s in revised.steps]
            if len(set(ids)) < len(ids):
                return revised, "two steps share an id"
            merged = assign_all(merge_replan(old, grounded(revised, capabilities)), present)
            return merged, plan_problem(merged, capabilities, max_steps)

        revised = await planner.ask_for_plan(model, messages, check, **self._ask())  # type: ignore[arg-type]
        await tasks.clear_instruction(self.deps.db, state["task_id"], state["instruction"])
        if isinstance(revised, str):
            note = f"Task stopped: the replan failed: {revised}."
            await self._show(state, old, "failed", note)
            await self.deps.port.notice(state["channel_key"], f"Task #{state['task_id']} {note[5:]}", state["thread"])
            return {"status": "failed", "note": note, "instruction": "", "new_batches": []}
        await self._show(state, revised, "running")
        return {"plan": revised.model_dump(), "instruction": "", "new_batches": []}

    async def step(self, state: TaskState) -> dict[str, Any]:
        assert state["plan"] is not None
        plan = Plan.model_validate(state["plan"])
        step = next_runnable(plan)
        assert step is not None
        key = state["channel_key"]
        present = await self._present(key)
        persona = next((p for p in present if p.id == step.assignee), None) or assign(step, present)
        if persona is None:
            plan = with_step(plan, step.id, "failed", f"nobody here has capability {step.capability!r}")
            await self._show(state, plan, "running")
            return {"plan": plan.model_dump(), "new_batches": []}
        plan = plan.model_copy(
            update={
                "steps": [s.model_copy(update={"assignee": persona.id}) if s.id == step.id else s for s in plan.steps]
            }
        )
        plan = with_step(plan, step.id, "in_progress")
        await self._show(state, plan, "running")
        artifacts = await task_artifacts.of_task(self.deps.db, state["task_id"])
        note_text, asked = self._instruction(state, plan, step, step_inputs(plan, step, artifacts, self._names()))
        note, begun_before = await tasks.begin_step(self.deps.db, state["task_id"], step.id, persona.id, note_text)
        # A step a stop cut short after its persona answered is not run again: its answer stands.
        reply = await tasks.reply_after(self.deps.db, key, persona.id, note) if begun_before else None
        stopped, delivered, batches = False, reply is not None, []
        if reply is None:
            serves = TaskStep(state["task_id"], plan.title, step.id, len(plan.steps))  # named by its requests
            asking = RoundInput(key, step.instruction, state["author_name"], (persona.id,), state["thread"], serves)
            after, turn = await self.nodes.turn(asking, Floor(speaker=persona.id, planned_turns=STEP_PLANNED_TURNS))
            stopped, delivered, batches = after.stopped, turn.delivered, [turn.batch] if turn.batch else []
            reply = await tasks.reply_after(self.deps.db, key, persona.id, note)
        if not delivered or reply is None:
            plan = with_step(plan, step.id, "failed", "no usable answer")
        elif (copied := copied_result(reply, state["request"], plan, step.id)) is not None:
            plan = with_step(plan, step.id, "failed", copied)
        elif only_repeats(reply, asked):
            plan = with_step(plan, step.id, "failed", "it only repeated its instruction")
        elif batches:  # its actions wait for approval, and the step with them
            plan = with_waiting(plan, step.id, [b["batch"] for b in batches], summary_of(reply))
            await self.answer.keep(state["task_id"], step.id, persona.id, reply)  # what its actions did joins it later
        else:
            plan = with_step(plan, step.id, "completed", summary_of(reply))
            await self.answer.keep(state["task_id"], step.id, persona.id, reply)
        await self._show(state, plan, "running")
        return {"plan": plan.model_dump(), "stop": stopped, "new_batches": batches}

    async def settle(self, state: TaskState) -> dict[str, Any]:
        """The step whose approvals have all ended completes with what its actions did, or fails with why."""
        assert state["plan"] is not None
        plan = Plan.model_validate(state["plan"])
        step = waiting_step(plan)
        assert step is not None
        found = [a for batch in step.batches for a in await approvals.in_batch(self.deps.db, batch)]
        if any(a.status.value not in FINAL_APPROVAL for a in found):
            return {"new_batches": []}  # not decided yet after all
        ended = [Ended(a.id, a.status.value, f"{a.action}: {outcome(a, for_persona=True)}") for a in found]
        plan = after_approvals(plan, step.id, ended)
        if next(s for s in plan.steps if s.id == step.id).status == "completed":
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
        instruction = step.instruction.rstrip(".")
        ask = f"{state['author_name']}: {names.get(step.assignee or '', 'you')}, {instruction[:1].lower()}{instruction[1:]}."
        return f"{header}{earlier} {ask}", f"{state['request']} {header} {ask}"

    async def finish(self, state: TaskState) -> dict[str, Any]:
        if state["status"] in DONE:
            return {"new_batches": []}
        plan = Plan.model_validate(state["plan"]) if state["plan"] is not None else None
        names = self._names()
        status: TaskStatus = "stopped"
        if by := state.get("cancelled_by"):
            reason = state.get("cancel_reason") or "no reason given"
            withdrawn = await self._withdrawn(plan, by)
            plan = cancelled(plan, f"cancelled: {reason}") if plan else None
            note = f"Cancelled by {by}: {reason}.{withdrawn}" + (f" {outcome_note(plan, names)}" if plan else "")
        elif state["stop"]:
            note = "Stopped (/task stop)." + (f" {outcome_note(plan, names)}" if plan else "")
        elif plan is not None and all_completed(plan):
            status, note = "completed", outcome_note(plan, names)
        else:
            assert plan is not None
            status = "failed"
            if (refused := rejected_required(plan)) is not None:
                why = f"required step {refused.id} was rejected ({refused.result_summary})"
            elif too_many_failed(plan):
                why = "more than half of its steps failed"
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
    graph.add_conditional_edges(START, _route, {name: name for name in moves})
    return graph.compile(checkpointer=checkpointer)
