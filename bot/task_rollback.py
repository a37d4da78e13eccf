"""`/task cancel rollback`: ask approval to undo what a task did, newest first (graph/rollback.py).

The undos are requested at once, as one approval batch of one request each, through the round
engine's approval flow: shown like any request (naming the task step each serves, and its risk),
decided by the channel's approvers, run once all are decided, and audited."""

from __future__ import annotations

from graph.engine import RoundEngine
from graph.rollback import rollback_batch, rollback_plan
from storage import approvals
from storage import batches as held_batches
from storage.database import Database
from storage.records import Approval
from storage.tasks import TaskRecord


class TaskRollback:
    def __init__(self, db: Database, engine: RoundEngine) -> None:
        self.db = db
        self.engine = engine

    async def ask(self, task: TaskRecord) -> str:
        """Request the undos of what `task` did; what to tell who asked."""
        undos, cannot = rollback_plan(await approvals.in_task(self.db, task.id), self.engine.runner.tools)
        kept = f" Not undoable (no undo declared): {_listed(cannot)}." if cannot else ""
        if not undos:
            return f"Nothing of task #{task.id} is left to undo.{kept}"
        batch = rollback_batch(task.id, task.channel_key, task.thread, undos, self.engine.runner.risk)
        await held_batches.hold(self.db, batch)  # a stop before its requests went out asks at the next start
        await self.engine.start_approvals([batch])
        asked = await approvals.in_batch(self.db, batch["batch"])
        pairs = ", ".join(f"#{a.id} undoes #{u.done.id} {u.done.action}" for a, u in zip(asked, undos, strict=False))
        return f"Rollback of task #{task.id} waits for approval, newest first: {pairs}.{kept}"


def _listed(done: list[Approval]) -> str:
    return ", ".join(f"#{a.id} {a.action}" for a in done)
