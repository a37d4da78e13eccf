"""Platform events already handled (processed_events): the durable dedupe every process shares.

Ids are namespaced by their source ("slack:T1:C2:<ts>", "discord:<id>", "slack-trigger:<id>").
A claim is an INSERT … ON CONFLICT DO NOTHING, so when two processes see one event, one wins.
Old ids are pruned with storage.history.forget_processed_events.
"""

from __future__ import annotations

import time

from storage.database import Database, Tx


async def claim_in(tx: Tx, event_id: str) -> bool:
    """Record event_id within tx: True the first time, False when it was recorded before."""
    return (
        await tx.execute(
            "INSERT INTO processed_events (event_id, seen_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING",
            (event_id, time.time()),
        )
        == 1
    )


async def claim(db: Database, event_id: str) -> bool:
    async with db.transaction() as tx:
        return await claim_in(tx, event_id)
