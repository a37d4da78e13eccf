"""Running rounds: the message a channel's round answers, and the round after its last committed turn.

A round's message leaves the inbox and becomes the channel's running round in one transaction.
Each turn then commits its lines, its outbox entries and the round's new state together
(storage.database.one_transaction), so a round cut by a crash is run on from its last committed
turn, at the next start or by another process, and nothing it said is said again. The round's end
forgets it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from storage.database import Database
from storage.inbox import Waiting


async def begin(db: Database, message: Waiting, answering_too: Sequence[int] = ()) -> None:
    """The round answering `message` starts: its line leaves the inbox (the round's prompts now see
    it), with the earlier lines it answers as well (`answering_too`), all in one transaction: a stop
    in between never leaves a line out of both the inbox and a round."""
    async with db.transaction() as tx:
        for line_id in (*answering_too, message.line_id):
            await tx.execute("DELETE FROM inbox WHERE line_id = ?", (line_id,))
        await tx.execute(
            "INSERT INTO running_rounds (channel_key, line_id, message, state, updated_at) VALUES (?, ?, ?, NULL, ?) "
            "ON CONFLICT (channel_key) DO UPDATE SET line_id = excluded.line_id, message = excluded.message, "
            "state = NULL, updated_at = excluded.updated_at",
            (message.channel_key, message.line_id, json.dumps(asdict(message)), time.time()),
        )


async def running(db: Database, channel_key: str) -> tuple[Waiting, dict[str, Any] | None] | None:
    """The channel's round cut short, if any: its message, and its state after its last committed turn."""
    row = await db.fetch_one("SELECT message, state FROM running_rounds WHERE channel_key = ?", (channel_key,))
    if row is None:
        return None
    fields = json.loads(row["message"])
    message = Waiting(**{**fields, "mentions": tuple(fields["mentions"])})
    return message, (json.loads(row["state"]) if row["state"] is not None else None)


async def save_turn(db: Database, channel_key: str, floor: Mapping[str, Any], batch: Mapping[str, Any] | None) -> None:
    """After a committed turn (inside the turn's transaction): the floor after it, and the batch of
    actions it left waiting, if any. A round that no waiting message started has no row."""
    async with db.transaction() as tx:
        row = await tx.fetch_one("SELECT state FROM running_rounds WHERE channel_key = ?", (channel_key,))
        if row is None:
            return
        state = json.loads(row["state"]) if row["state"] else {"batches": []}
        state["floor"] = dict(floor)
        if batch:
            state["batches"].append(dict(batch))
        await tx.execute(
            "UPDATE running_rounds SET state = ?, updated_at = ? WHERE channel_key = ?",
            (json.dumps(state), time.time(), channel_key),
        )


async def finish(db: Database, channel_key: str) -> None:
    async with db.transaction() as tx:
        await tx.execute("DELETE FROM running_rounds WHERE channel_key = ?", (channel_key,))


async def channels_running(db: Database) -> list[str]:
    rows = await db.fetch_all("SELECT channel_key FROM running_rounds ORDER BY channel_key")
    return [row["channel_key"] for row in rows]
