"""`/task cancel rollback`: ask approval to undo what a task did, newest first (graph/rollback.py).

The undos are requested at once, as one approval batch of one request each, through the round
engine's approval flow: shown like any request (naming the task step each serves, and its risk),
decided by the channel's approvers, run once all are decided, and audited. A task's rollbacks are
serialised and each undo is claimed once per original action (storage/task_undos.py), in the same
transaction that holds the batch, so two asked at once never request an undo twice; the task is
marked rolled back there too (it earns no trust for what it completed, graph/trust.py)."""

from __future__ import annotations

from graph.engine import RoundEngine
from graph.rollback import rollback_batch, rollback_batch_id, rollback_plan
from storage import approvals, task_undos, tasks
from storage import batches as held_batches
from storage.database import Database, one_transaction
from storage.records import Approval
from storage.tasks import TaskRecord


class TaskRollback:
    def __init__(self, db: Database, engine: RoundEngine) -> None:
        self.db = db
        self.engine = engine

    async def ask(self, task: TaskRecord, by: str) -> str:
        """Request the undos of what `task` did (`by` asked); what to tell who asked. The task counts
        as rolled back from now on, whatever is left to undo."""
        async with one_transaction(self.db) as tx:
            # One rollback of a task at a time: a second one, asked at once, sees this one's claims.
            await tx.serialize(f"rollback:{task.id}")
            await tasks.mark_rolled_back(self.db, task.id, by)
            in_task = await approvals.in_task(self.db, task.id)
            undos, cannot = rollback_plan(in_task, self.engine.runner.tools, await task_undos.claims(self.db, task.id))
            batch_id = rollback_batch_id(task.channel_key, task.id)
            claimed = await task_undos.claim(self.db, task.id, batch_id, [u.done.id for u in undos])
            undos = [u for u in undos if u.done.id in claimed]
            if undos:
                batch = rollback_batch(batch_id, task.id, task.channel_key, task.thread, undos, self.engine.runner.risk)
                # Held with its claims: a stop before its requests went out asks at the next start.
                await held_batches.hold(self.db, batch)
        kept = f" Not undoable (no undo declared): {_listed(cannot)}." if cannot else ""
        if not undos:
            return f"Nothing of task #{task.id} is left to undo.{kept}"
        await self.engine.start_approvals([batch])
        asked = await approvals.in_batch(self.db, batch["batch"])
        pairs = ", ".join(f"#{a.id} undoes #{u.done.id} {u.done.action}" for a, u in zip(asked, undos, strict=False))
        return f"Rollback of task #{task.id} waits for approval, newest first: {pairs}.{kept}"


def _listed(done: list[Approval]) -> str:
    return ", ".join(f"#{a.id} {a.action}" for a in done)
