"""Task mode in a channel: /task TEXT, status, result (the task's answer, posted again), stop, replan TEXT; the people steering a running task
(pause, resume, takeover, done N, cancel); and the coordinator's reading of human lines when
[tasks] auto_detect is on.

A task runs in its channel's queue like a round (graph/task_flow.py supervises it). What people ask
of it is stored at once and taken by the supervisor between steps; a task that waits for a person
(a pause, a takeover, an approval) is queued again here when that person acts. Only the task's
requester or an approver may pause, resume, take over, finish steps of or cancel it. Cancelling
rejects the approvals its steps are waiting for, with the reason, through the approvals core;
`/task cancel rollback` also asks approval to undo what it did (bot/task_rollback.py), and works on
a task that has ended too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.approval_desk import Actor
from bot.command_values import TaskCommand
from bot.task_rollback import TaskRollback
from graph.engine import RoundEngine
from graph.task_text import handover, render_plan
from graph.tasks import Plan, Steering, TaskStatus, why_not_hand_in
from storage import approvals, task_artifacts, tasks
from storage.database import Database
from storage.tasks import TaskRecord

STEERING_VERBS = {
    "pause": "pause",
    "resume": "resume",
    "takeover": "take over",
    "done": "finish steps of",
    "cancel": "cancel",
}
NO_REASON = "no reason given"


def steering_refusal(verb: str, task_id: int) -> str:
    """The one answer to someone who may not steer the task."""
    return f"Only the task's requester or an approver can {STEERING_VERBS[verb]} task #{task_id}."


@dataclass(frozen=True)
class RunTask:
    """A queued item: run a task, or resume it where it was."""

    channel_key: str
    task_id: int


Enqueue = Callable[[RunTask], None]
MayDecide = Callable[[str, Actor], bool]
Withdraw = Callable[[list[int], Actor, str], Awaitable[list[int]]]
"""(approval ids, who, why) -> the ids of those rejected now (they were still pending)."""


class TaskDesk:
    def __init__(
        self,
        db: Database,
        engine: RoundEngine,
        enqueue: Enqueue,
        *,
        auto_detect: bool,
        may_decide: MayDecide,
        withdraw: Withdraw,
    ) -> None:
        self.db = db
        self.engine = engine
        self.enqueue = enqueue
        self.auto_detect = auto_detect
        self.may_decide = may_decide
        self.withdraw = withdraw
        self.rollback = TaskRollback(db, engine)

    async def command(self, key: str, command: TaskCommand, thread: str | None, actor: Actor) -> tuple[str, bool]:
        """What to answer the person who typed it (privately), and whether it was done."""
        if command.verb == "start":
            task = await tasks.start(self.db, key, thread, command.text, actor.id, actor.name)
            if task is None:
                return "A task is already running here: /task status shows it, /task stop ends it.", False
            self.enqueue(RunTask(key, task.id))
            return f"Task #{task.id} taken: the planner splits it into steps now.", True
        latest = await tasks.latest(self.db, key)
        if latest is None and command.verb in ("status", "result"):
            return "No task here yet: /task TEXT starts one.", False
        if command.verb == "status":
            assert latest is not None
            return await self.status_text(latest), True
        if command.verb == "result":
            assert latest is not None
            return await self._answer_text(latest)
        if command.rollback and latest is not None and not latest.active:  # what a finished task did
            if not (actor.id and actor.id == latest.author_id) and not self.may_decide(key, actor):
                return steering_refusal(command.verb, latest.id), False
            return await self.rollback.ask(latest, actor.name), True
        if latest is None or not latest.active:
            return "No task is running here.", False
        if command.verb == "stop":
            await tasks.request_stop(self.db, latest.id)
            return f"Task #{latest.id} stops before its next step; finished steps stay done.", True
        if command.verb == "replan":
            await tasks.request_replan(self.db, latest.id, command.text)
            return f"Task #{latest.id} is replanned before its next step; completed steps are kept.", True
        if not (actor.id and actor.id == latest.author_id) and not self.may_decide(key, actor):
            return steering_refusal(command.verb, latest.id), False
        reply, ok = await self._steer(latest, command, actor)
        if ok:
            self.enqueue(RunTask(key, latest.id))  # it shows what changed, and goes on if it may
        return reply, ok

    async def _steer(self, task: TaskRecord, command: TaskCommand, actor: Actor) -> tuple[str, bool]:
        number = task.id
        if command.verb == "pause":
            if task.paused_by:
                return f"Task #{number} is paused already (by {task.paused_by}).", False
            await tasks.set_paused(self.db, number, actor.name)
            return f"Task #{number} pauses: the current step finishes, no new one starts until /task resume.", True
        if command.verb == "resume":
            if not task.paused_by and not task.taken_by:
                return f"Task #{number} is not paused.", False
            await tasks.set_paused(self.db, number, None)
            await tasks.take_over(self.db, number, None)
            await tasks.set_recheck(self.db, number, True)  # the planner checks the rest of the plan first
            return f"Task #{number} goes on: the personas take its remaining steps.", True
        plan = Plan.model_validate_json(task.plan) if task.plan else None
        if command.verb == "takeover":
            await tasks.take_over(self.db, number, actor.name)
            return handover(number, task.request, plan, self._names()), True
        if command.verb == "done":
            if (why := why_not_hand_in(plan, command.step)) is not None:
                return f"Step {command.step} of task #{number} is not marked done: {why}.", False
            await tasks.hand_in(self.db, number, command.step, actor.name, command.text)
            return f"Step {command.step} of task #{number} is marked done by you.", True
        reason = command.text or NO_REASON
        if not await tasks.cancel(self.db, number, actor.name, reason):
            return f"Task #{number} is being cancelled already.", False
        rejected = await self.withdraw(await self._pending_approvals(task), actor, reason)
        told = f" Rejected its pending approvals: {', '.join(f'#{n}' for n in rejected)}." if rejected else ""
        undo = f" {await self.rollback.ask(task, actor.name)}" if command.rollback else ""
        return f"Task #{number} is cancelled ({reason}).{told}{undo}", True

    async def _pending_approvals(self, task: TaskRecord) -> list[int]:
        """The approvals the task's steps raised that are still pending."""
        plan = Plan.model_validate_json(task.plan) if task.plan else None
        batches = [batch for step in (plan.steps if plan else []) for batch in step.batches]
        found = [a for batch in batches for a in await approvals.in_batch(self.db, batch)]
        return [a.id for a in found if a.status.value == "pending"]

    async def after_run(self, task_id: int) -> None:
        """A cancelled task's steps may have raised approvals while it was cancelled: they are rejected too."""
        task = await tasks.get(self.db, task_id)
        if task is not None and task.cancelled_by and not task.active:
            pending = await self._pending_approvals(task)
            if pending:
                await self.withdraw(pending, Actor("", task.cancelled_by), task.cancel_reason or NO_REASON)

    def _names(self) -> dict[str, str]:
        return {p.id: p.display_name for p in self.engine.deps.personas.values()}

    async def status_text(self, task: TaskRecord) -> str:
        """The task's plan as it stands, then its answer once it has one."""
        plan = Plan.model_validate_json(task.plan) if task.plan else None
        status: TaskStatus = task.status  # type: ignore[assignment]  # the table's CHECK keeps it one of them
        steering = Steering(task.paused_by, task.taken_by, task.cancelled_by, task.cancel_reason)
        text = render_plan(task.id, plan, status, self._names(), task.note, steering=steering)
        answer = await task_artifacts.answer(self.db, task.id)
        return f"{text}\n{self._answer_line(task, answer)}" if answer else text

    def _answer_line(self, task: TaskRecord, answer: task_artifacts.Artifact) -> str:
        return f"Task #{task.id}'s answer ({self._names().get(answer.author_id, answer.author_id)}): {answer.text}"

    async def _answer_text(self, task: TaskRecord) -> tuple[str, bool]:
        """The task's answer, to post again; else why there is none."""
        answer = await task_artifacts.answer(self.db, task.id)
        if answer is not None:
            return self._answer_line(task, answer), True
        if task.active:
            return f"Task #{task.id} has no answer yet: it is written after its last step.", False
        return (
            f"Task #{task.id} has no answer: no step of it was completed, it was cancelled, or no persona could write one.",
            False,
        )

    async def start_if_task(self, key: str, thread: str | None, text: str, author_name: str) -> bool:
        """With auto_detect on, a human line the coordinator reads as a task runs as one, in place of
        a round (its line is already in the history). False: answer it with a round."""
        if not self.auto_detect or text.startswith("/") or not await self.engine.tasks.is_task(text, author_name):
            return False
        task = await tasks.start(self.db, key, thread, text, "", author_name, record_line=False)
        if task is None:
            return False  # one task at a time: the line is answered as chat
        await self.engine.tasks.run(task.id)
        return True

    async def resume_all(self, channel_key: str | None = None) -> None:
        """Every unfinished task (of one channel) runs on from its last checkpoint: at start-up, when a
        channel's replies resume, and when an approval a step waits for has ended."""
        for task in await tasks.unfinished(self.db):
            if channel_key in (None, task.channel_key):
                self.enqueue(RunTask(task.channel_key, task.id))
