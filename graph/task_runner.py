"""Runs tasks between the supervisor's moves (graph/task_flow.py): resumes a task where its last
checkpoint left it, reads what people asked of it from storage before each move (stop, replan,
pause, takeover, the steps they finished, cancel), starts the approval flows of a step's actions,
and lets the task wait, out of its channel's queue, while a person has the next word: an approval
not decided yet, a pause, or the remaining steps of a takeover. Whoever frees it (a decision that
ends a step's approvals, /task resume, /task done) queues the task again; a waiting task shows its
plan as it stands and waits once more.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Checkpointer

from graph import planner
from graph.deps import EngineDeps
from graph.nodes import RoundNodes
from graph.task_flow import DONE, StartApprovals, TaskFlow, TaskState, build_task_graph, next_move
from graph.tasks import Plan, waiting_steps
from storage import channels, tasks
from storage.tasks import TaskRecord

MODEL_MOVES = ("plan", "replan", "step")  # moves that call a model: each waits while the day's budget is spent


class TaskRunner:
    """Starts, resumes and runs tasks: one task graph invocation per move, approvals started in between."""

    def __init__(
        self, deps: EngineDeps, nodes: RoundNodes, checkpointer: Checkpointer, start_approvals: StartApprovals
    ) -> None:
        self.deps = deps
        self.flow = TaskFlow(deps, nodes)
        self.graph = build_task_graph(self.flow, checkpointer)
        self.start_approvals = start_approvals
        self.flow.start_approvals = start_approvals  # a step's requests go out as it ends, while others run

    async def run(self, task_id: int) -> None:
        """Run the task until it ends or waits for a person, or resume it where its last checkpoint left it."""
        config: RunnableConfig = {"configurable": {"thread_id": f"task:{task_id}"}}
        snapshot = await self.graph.aget_state(config)
        if snapshot.next:  # stopped inside a move: it runs again from its start (a step, from what it committed)
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
            given.update(_asked(record))
            move = next_move(given, self.deps.settings, undecided=await self._undecided(given))  # type: ignore[arg-type]
            if move == "wait":
                await self.flow.show_now(given)  # type: ignore[arg-type]
                return
            if move in MODEL_MOVES and await self._budget_spent(record.channel_key):
                text = f"Task #{task_id} waits: this channel has used today's model tokens. It goes on tomorrow (UTC)."
                await self.deps.port.notice(record.channel_key, text, record.thread)
                return
            channel = await channels.get_channel(self.deps.db, record.channel_key)
            if channel is not None and channel.paused and move == "step":
                # Steps are persona replies: a paused channel gets none. /moderate resume runs it on.
                text = f"Task #{task_id} waits while replies are paused here; /moderate resume continues it."
                await self.deps.port.notice(record.channel_key, text, record.thread)
                return
            result = await self.graph.ainvoke(given, config, durability="sync")
            await self.start_approvals(list(result.get("new_batches", [])))

    async def _budget_spent(self, channel_key: str) -> bool:
        spent = self.deps.budget_spent
        return spent is not None and await spent(channel_key)

    async def _undecided(self, state: dict[str, Any]) -> bool:
        """Whether every step waiting for approval still has an approval that has not ended."""
        plan = Plan.model_validate(state["plan"]) if state.get("plan") is not None else None
        if plan is None or not waiting_steps(plan):
            return False
        return all((await self.flow.waiting_for(plan)).values())

    async def is_task(self, text: str, author_name: str) -> bool:
        """The coordinator's reading of a human line: a task for the team, or chat."""
        model = self.deps.models.coordinator_model(planner.COORDINATOR_SCHEMA)
        settings = self.deps.settings
        return await planner.is_task(
            model, text, author_name, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
        )


def _asked(record: TaskRecord) -> dict[str, Any]:
    """What people asked of the task, as stored: it goes into the state of the next move."""
    asked: dict[str, Any] = {
        "paused_by": record.paused_by,
        "taken_by": record.taken_by,
        "cancelled_by": record.cancelled_by,
        "cancel_reason": record.cancel_reason,
        "handed_in": [asdict(h) for h in record.handed_in],
        "recheck": record.recheck,
    }
    if record.stop_requested:
        asked["stop"] = True
    if record.instruction:
        asked["instruction"] = record.instruction
    return asked


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
        paused_by=None,
        taken_by=None,
        cancelled_by=None,
        cancel_reason="",
        handed_in=[],
        recheck=False,
    )  # type: ignore[return-value]
