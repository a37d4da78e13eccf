"""The supervisor: a task's plan run step by step, as a LangGraph thread per task ("task:<id>").

Each invocation of the task graph does one thing (plan, replan, run the next step, or finish) and
its state, the plan with every step's status, is checkpointed before the next: a task a stop
interrupted resumes from its last checkpoint at start-up. Between invocations the runner starts the
approval flows of the step's actions (each a graph run of its own) and reads the people's
/task stop and /task replan from storage.

A step is a persona turn like any other (RoundNodes.turn: draft, review, deliver or skip), after a
private note to the assigned persona with the step's instruction and the results it builds on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graph import planner
from graph.deps import EngineDeps
from graph.nodes import RoundNodes
from graph.state import Floor, RoundInput
from graph.tasks import (
    Plan,
    Step,
    TaskStatus,
    all_completed,
    assign,
    assign_all,
    capabilities_of,
    grounded,
    merge_replan,
    next_runnable,
    only_repeats,
    outcome_note,
    plan_problem,
    render_plan,
    summary_of,
    too_many_failed,
    with_step,
)
from personas import Persona
from storage import channels, history, tasks
from storage.tasks import TaskRecord

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


Next = Literal["plan", "replan", "step", "finish"]


def next_move(state: TaskState) -> Next:
    """What the supervisor does next, from the task's state alone."""
    if state["stop"] or state["status"] in DONE:
        return "finish"
    if state["plan"] is None:
        return "plan"
    if state["instruction"]:
        return "replan"
    plan = Plan.model_validate(state["plan"])
    if too_many_failed(plan) or next_runnable(plan) is None:
        return "finish"
    return "step"


async def _route(state: TaskState) -> str:
    return next_move(state)


class TaskFlow:
    def __init__(self, deps: EngineDeps, nodes: RoundNodes) -> None:
        self.deps = deps
        self.nodes = nodes

    # -- helpers -------------------------------------------------------------------------------

    async def _present(self, channel_key: str) -> list[Persona]:
        ids = await channels.participants(self.deps.db, channel_key)
        return [self.deps.personas[i] for i in ids if i in self.deps.personas]

    def _names(self) -> dict[str, str]:
        return {p.id: p.display_name for p in self.deps.personas.values()}

    async def _show(self, state: TaskState, plan: Plan | None, status: TaskStatus, note: str = "") -> None:
        """Store the task's plan and status, then show it: the plan message is posted once and edited after."""
        task_id = state["task_id"]
        await tasks.save(self.deps.db, task_id, status=status, plan=plan.model_dump_json() if plan else None, note=note)
        record = await tasks.get(self.deps.db, task_id)
        shown_as = record.shown_as if record else None
        text = render_plan(task_id, plan, status, self._names(), note)
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
            return await self._stop_unplanned(state, "nobody here has a capability (see README: capabilities)")
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
        note_text, asked = self._instruction(state, plan, step)
        note = await history.append_private_note(self.deps.db, key, persona.id, note_text)
        asking = RoundInput(key, step.instruction, state["author_name"], (persona.id,), state["thread"])
        after, turn = await self.nodes.turn(asking, Floor(speaker=persona.id, planned_turns=STEP_PLANNED_TURNS))
        reply = await tasks.reply_after(self.deps.db, key, persona.id, note.id)
        if not turn.delivered or reply is None:
            plan = with_step(plan, step.id, "failed", "no usable answer")
        elif only_repeats(reply, asked):
            plan = with_step(plan, step.id, "failed", "it only repeated its instruction")
        else:
            plan = with_step(plan, step.id, "completed", summary_of(reply))
        await self._show(state, plan, "running")
        return {
            "plan": plan.model_dump(),
            "stop": after.stopped,
            "new_batches": [turn.batch] if turn.batch else [],
        }

    def _instruction(self, state: TaskState, plan: Plan, step: Step) -> tuple[str, str]:
        """The assigned persona's private note (its step, and the results of the steps it builds on),
        and what it was asked: the task's request and its step, without those results."""
        done = {s.id: s for s in plan.steps if s.status == "completed"}
        names = self._names()
        results = [
            f"step {d} ({names.get(done[d].assignee or '', '?')}): {done[d].result_summary}"
            for d in step.depends_on
            if d in done
        ]
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
        if state["stop"]:
            status: TaskStatus = "stopped"
            note = "Stopped (/task stop)." + (f" {outcome_note(plan)}" if plan else "")
        elif plan is not None and all_completed(plan):
            status, note = "completed", outcome_note(plan)
        else:
            assert plan is not None
            status = "failed"
            why = "more than half of its steps failed" if too_many_failed(plan) else "no step can run any more"
            note = f"Stopped: {why}. {outcome_note(plan)}"
        await self._show(state, plan, status, note)
        await self.deps.port.notice(state["channel_key"], f"Task #{state['task_id']}: {note}", state["thread"])
        return {"status": status, "note": note, "new_batches": []}


def build_task_graph(flow: TaskFlow, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(TaskState)
    graph.add_node("plan", flow.plan)
    graph.add_node("replan", flow.replan)
    graph.add_node("step", flow.step)
    graph.add_node("finish", flow.finish)
    moves = ("plan", "replan", "step", "finish")
    for name in moves:
        graph.add_edge(name, END)
    graph.add_conditional_edges(START, _route, {name: name for name in moves})
    return graph.compile(checkpointer=checkpointer)


class TaskRunner:
    """Starts, resumes and runs tasks: one task graph invocation per move, approvals started in between."""

    def __init__(
        self, deps: EngineDeps, nodes: RoundNodes, checkpointer: Checkpointer, start_approvals: StartApprovals
    ) -> None:
        self.deps = deps
        self.graph = build_task_graph(TaskFlow(deps, nodes), checkpointer)
        self.start_approvals = start_approvals

    async def run(self, task_id: int) -> None:
        """Run the task until it ends, or resume it where its last checkpoint left it."""
        config: RunnableConfig = {"configurable": {"thread_id": f"task:{task_id}"}}
        snapshot = await self.graph.aget_state(config)
        if snapshot.next:  # stopped inside a move: it runs again from its start
            result = await self.graph.ainvoke(None, config, durability="sync")
            await self.start_approvals(list(result.get("new_batches", [])))
        while True:
            record = await tasks.get(self.deps.db, task_id)
            if record is None:
                return
            values = (await self.graph.aget_state(config)).values
            if values and values["status"] in DONE:
                return
            given: dict[str, Any] = dict(values) if values else _first_state(record)
            if record.stop_requested:
                given["stop"] = True
            if record.instruction:
                given["instruction"] = record.instruction
            channel = await channels.get_channel(self.deps.db, record.channel_key)
            if channel is not None and channel.paused and next_move(given) == "step":  # type: ignore[arg-type]
                # Steps are persona replies: a paused channel gets none. /moderate resume runs it on.
                text = f"Task #{task_id} waits while replies are paused here; /moderate resume continues it."
                await self.deps.port.notice(record.channel_key, text, record.thread)
                return
            result = await self.graph.ainvoke(given, config, durability="sync")
            await self.start_approvals(list(result.get("new_batches", [])))

    async def is_task(self, text: str, author_name: str) -> bool:
        """The coordinator's reading of a human line: a task for the team, or chat."""
        model = self.deps.models.coordinator_model(planner.COORDINATOR_SCHEMA)
        settings = self.deps.settings
        return await planner.is_task(
            model, text, author_name, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
        )


def _first_state(record: TaskRecord) -> dict[str, Any]:
    return TaskState(
        task_id=record.id,
        channel_key=record.channel_key,
        thread=record.thread,
        request=record.request,
        author_name=record.author_name,
        plan=None,
        status="planning",
        note="",
        instruction="",
        stop=False,
        new_batches=[],
    )  # type: ignore[return-value]
