"""The undos a task's rollback asked for: at most one per original action, keyed by that action's
approval id (the table's primary key), so two rollbacks asked at once never request the same undo
twice. A claim names the rollback batch whose request `undo-<approval id>` asks for it; it is taken
again only once that request was rejected or expired (graph/rollback.py asks again for those)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from storage.database import Database

# The claim's own undo request was turned down: another rollback may ask for it again.
_TURNED_DOWN = (
    "EXISTS (SELECT 1 FROM approvals a WHERE a.batch = task_undos.batch "
    "AND a.call_id = 'undo-' || task_undos.undoes AND a.status IN ('rejected', 'expired'))"
)


async def claims(db: Database, task_id: int) -> dict[int, str]:
    """Each action of the task whose undo a rollback asked for: its approval id -> that rollback's batch."""
    rows = await db.fetch_all("SELECT undoes, batch FROM task_undos WHERE task_id = ?", (task_id,))
    return {int(row["undoes"]): str(row["batch"]) for row in rows}


async def claim(db: Database, task_id: int, batch: str, undoes: Iterable[int]) -> list[int]:
    """Claim the undo of each action (approval ids) for `batch`: the ids claimed now. An undo asked
    for already, and not turned down, stays with the batch that asked for it."""
    claimed = []
    async with db.transaction() as tx:
        for approval_id in undoes:
            changed = await tx.execute(
                "INSERT INTO task_undos (undoes, task_id, batch, asked_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (undoes) DO UPDATE SET batch = excluded.batch, asked_at = excluded.asked_at "
                f"WHERE {_TURNED_DOWN}",
                (approval_id, task_id, batch, time.time()),
            )
            if changed == 1:
                claimed.append(approval_id)
    return claimed
