"""The supervisor's "step" move: the steps that may run now run side by side, each its persona's own
turn (RoundNodes.turn: draft, review, deliver or skip), posted as each finishes.

Up to [tasks] max_parallel_steps steps run at once (graph/task_schedule.py picks them); when one
ends, the plan message shows it and the steps it freed start, until none runs. A failed attempt is
tried again, with why it failed in the persona's next note, up to [tasks] step_attempts. No new
step starts once people asked something of the task (a stop, a pause, a takeover, a replan, a step
they finished, a cancellation), the channel's replies are paused, a step failed for good (the
planner checks the plan first) or the task lost too many steps: the running ones finish, then the
move ends.

A step whose actions wait for approval has its requests sent as it ends, while the others run on.
Each attempt's note and its start are stored together (storage/tasks.py, one record per step), and
how it ended right after: a move a crash cut short runs again from its start, takes what its steps'
records say, and runs on each step that was under way from its note, taking the persona's
committed answer rather than running the turn again, so nothing of a step is posted twice.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graph.observe import STEP_ATTEMPTS, STEP_FAILURES
from graph.state import Floor, RoundInput
from graph.step_results import no_result
from graph.task_answer import step_inputs
from graph.task_schedule import (
    after_attempt,
    replan_due,
    running_steps,
    started,
    steps_to_start,
    too_many_failed,
    with_records,
)
from graph.tasks import Plan, Step, assign, rejected_required, summary_of
from personas import Persona
from storage import channels, task_artifacts, tasks
from storage.records import TaskStep

if TYPE_CHECKING:
    from graph.task_flow import TaskFlow, TaskState

log = logging.getLogger(__name__)

# A step is a round of one turn; a failed turn is the task's to count, not a stopped round's.
STEP_PLANNED_TURNS = 2


@dataclass
class Attempt:
    """How one attempt at a step ended: why it failed (None: it did not), its result, the batches of
    actions it left waiting for approval, and whether the channel's breaker stopped replies."""

    step_id: int
    failure: str | None
    result: str = ""
    batches: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    cause: str = ""  # the failure's kind, for the metrics


class StepPool:
    def __init__(self, flow: TaskFlow) -> None:
        self.flow = flow
        self.deps = flow.deps

    async def run(self, state: TaskState) -> dict[str, Any]:
        assert state["plan"] is not None
        plan = with_records(
            Plan.model_validate(state["plan"]), await tasks.step_records(self.deps.db, state["task_id"])
        )
        running: dict[asyncio.Task[Attempt], int] = {}
        stopped, new_batches = False, []
        try:
            while True:
                if not stopped and not await self._hold(state, plan):
                    # Cut short by a stop, a step under way runs on from its note.
                    launching = [s.id for s in running_steps(plan) if s.id not in running.values()]
                    for step in steps_to_start(plan, self.deps.settings.max_parallel_steps):
                        persona = await self._persona(state, step)
                        plan = started(plan, step.id, persona.id if persona else step.assignee or "")
                        if persona is None:
                            why = f"nobody here has capability {step.capability!r}"
                            plan = await self._ended(state, plan, Attempt(step.id, why, cause="persona"))
                        else:
                            launching.append(step.id)
                    await self.flow.show_plan(state, plan)  # shown under way before they run
                    for step in [s for s in plan.steps if s.id in launching]:
                        running[self._launch(state, plan, step)] = step.id
                if not running:
                    if stopped or await self._hold(state, plan) or not steps_to_start(plan, 1):
                        break
                    continue  # a step nobody could take goes round again, to its next attempt
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    running.pop(finished)
                    attempt = finished.result()
                    stopped = stopped or attempt.stopped
                    plan = await self._ended(state, plan, attempt)
                    if attempt.batches and self.flow.start_approvals is not None:
                        await self.flow.start_approvals(list(attempt.batches))  # its requests go out now
                    else:
                        new_batches += attempt.batches
                await self.flow.show_plan(state, plan)
        finally:
            for left in running:
                left.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        return {"plan": plan.model_dump(), "stop": stopped, "new_batches": new_batches}

    async def _hold(self, state: TaskState, plan: Plan) -> bool:
        """Whether no new step starts now (the running ones finish)."""
        settings = self.deps.settings
        if too_many_failed(plan, settings.failure_threshold) or rejected_required(plan):
            return True
        if replan_due(plan, recheck=False, max_replans=settings.max_replans):
            return True  # a step failed for good: the planner checks the rest first
        record = await tasks.get(self.deps.db, state["task_id"])
        if record is None or record.stop_requested or record.cancelled_by or record.instruction:
            return True
        if record.paused_by or record.taken_by or record.handed_in:
            return True
        channel = await channels.get_channel(self.deps.db, state["channel_key"])
        return channel is not None and channel.paused

    async def _persona(self, state: TaskState, step: Step) -> Persona | None:
        present = await self.flow._present(state["channel_key"])
        return next((p for p in present if p.id == step.assignee), None) or assign(step, present)

    def _launch(self, state: TaskState, plan: Plan, step: Step) -> asyncio.Task[Attempt]:
        return asyncio.create_task(self._attempt(state, plan, step), name=f"task:{state['task_id']}:step:{step.id}")

    async def _ended(self, state: TaskState, plan: Plan, attempt: Attempt) -> Plan:
        """The plan after an attempt, with the attempt's end stored at once."""
        settings = self.deps.settings
        plan = after_attempt(
            plan,
            attempt.step_id,
            failure=attempt.failure,
            result=attempt.result,
            batches=[b["batch"] for b in attempt.batches],
            step_attempts=settings.step_attempts,
        )
        step = next(s for s in plan.steps if s.id == attempt.step_id)
        if attempt.failure is None:
            outcome = "waiting" if step.batches else "completed"
        else:
            outcome = "retried" if step.status == "pending" else "failed"
        STEP_ATTEMPTS.labels(outcome).inc()
        if step.status == "failed":
            STEP_FAILURES.labels(attempt.cause or "other").inc()
        await tasks.end_step(
            self.deps.db, state["task_id"], step.id, plan.revision, step.attempts, step.model_dump_json()
        )
        return plan

    async def _attempt(self, state: TaskState, plan: Plan, step: Step) -> Attempt:
        try:
            return await self._turn(state, plan, step)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # one step's bad luck is not the task's end: it is tried again
            log.exception("step %s of task %s failed", step.id, state["task_id"])
            return Attempt(step.id, f"it failed ({type(exc).__name__})", cause="error")

    async def _turn(self, state: TaskState, plan: Plan, step: Step) -> Attempt:
        key = state["channel_key"]
        persona_id = step.assignee or ""
        artifacts = await task_artifacts.of_task(self.deps.db, state["task_id"])
        inputs = step_inputs(plan, step, artifacts, self.flow._names(), self.deps.settings.token_budget)
        note_text, asked = self.flow._instruction(state, plan, step, inputs)
        note, begun_before = await tasks.begin_step(
            self.deps.db, state["task_id"], step.id, plan.revision, step.attempts, persona_id, note_text,
            step.model_dump_json(),
        )  # fmt: skip
        # A step a stop cut short after its persona answered is not run again: its answer stands.
        reply = await tasks.reply_after(self.deps.db, key, persona_id, note) if begun_before else None
        stopped, delivered, batches, why = False, reply is not None, [], ""
        if reply is None:
            serves = TaskStep(state["task_id"], plan.title, step.id, len(plan.steps))  # named by its requests
            asking = RoundInput(key, step.instruction, state["author_name"], (persona_id,), state["thread"], serves)
            after, turn = await self.flow.nodes.turn(
                asking, Floor(speaker=persona_id, planned_turns=STEP_PLANNED_TURNS), of_round=False
            )
            stopped, delivered, batches, why = (
                after.stopped,
                turn.delivered,
                [turn.batch] if turn.batch else [],
                turn.failure,
            )
            reply = await tasks.reply_after(self.deps.db, key, persona_id, note)
        if not delivered or reply is None:
            cause = "model" if why == "model error" else "review"
            return Attempt(
                step.id, f"no usable answer ({why})" if why else "no usable answer", stopped=stopped, cause=cause
            )
        missing = no_result(
            reply, asked=asked, request=state["request"], plan=plan, step_id=step.id, acts=bool(batches)
        )
        if missing is not None:
            return Attempt(step.id, missing.why, stopped=stopped, cause=missing.cause)
        # Its whole result is the task's artifact (what its actions did joins it once they ended).
        await self.flow.answer.keep(state["task_id"], step.id, persona_id, reply)
        return Attempt(step.id, None, summary_of(reply), batches, stopped)
