"""Batches of a persona's actions that wait for a person, held from the moment its turn decides
they wait until their approval flow ends.

A batch is held in the transaction that stores the persona's calls (graph/action_runner.py), so
no stop between a turn's calls and the approval requests they need can leave a call that nobody
is asked about. The batch's approval flow (graph/approval_flow.py) lets it go when it ends;
start-up (bot/recovery.py) starts or resumes every batch still held whose requests are all decided.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from storage.database import Database


async def hold(db: Database, batch: Mapping[str, Any]) -> None:
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO held_batches (batch, channel_key, state, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (batch) DO NOTHING",
            (batch["batch"], batch["channel_key"], json.dumps(dict(batch)), time.time()),
        )


async def held(db: Database, batch_id: str) -> dict[str, Any] | None:
    row = await db.fetch_one("SELECT state FROM held_batches WHERE batch = ?", (batch_id,))
    return json.loads(row["state"]) if row else None


async def all_held(db: Database) -> list[tuple[str, str]]:
    """Every held batch, as (batch id, channel key), oldest first."""
    rows = await db.fetch_all("SELECT batch, channel_key FROM held_batches ORDER BY created_at, batch")
    return [(row["batch"], row["channel_key"]) for row in rows]


async def let_go(db: Database, batch_id: str) -> None:
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM held_batches WHERE batch = ?", (batch_id,))
