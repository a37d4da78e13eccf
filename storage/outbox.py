"""The outbox: everything Roundtable posts, stored before it is sent.

An entry is written in the transaction of the line or state it shows (inside a round's turn, that
is the turn's one transaction). A sender in any process claims the oldest waiting entry of each
conversation for a while (a lease, taken with a compare-and-set UPDATE and renewed while it sends,
so processes sharing a PostgreSQL database never send one entry together), marks the attempt as in
flight before the platform call, and records the outcome: sent (with the platform's message id),
tried again later, or failed. An attempt whose outcome is unknown (a crash, a timeout, or a long text
cut short after its first pieces) stays marked until the entry is sent, so every later attempt
looks for what it may have posted. Before its platform call an attempt may store its look-back mark (a
plain integer the platform's port chooses: on Discord, the newest message id in the channel), so that
whichever process makes the next attempt looks only at what came after it. A later entry of a conversation waits while an earlier one
waits, so order is kept. Each process sends only the platforms it serves.
Sent entries are deleted after a week (bot/timers.py's hourly upkeep).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.database import Database, Row, Tx

# The look-back mark of an attempt that was in flight when marks began to be kept (migration 27):
# what it posted can only be looked for without one.
MARK_NEVER_NOTED = -1


@dataclass(frozen=True)
class Entry:
    id: int
    channel_key: str
    thread: str | None
    kind: str
    payload: dict[str, Any]
    status: str
    created_at: float
    attempts: int
    next_try_at: float
    in_flight_since: float | None
    sent_ref: str | None
    error: str | None
    look_back_mark: int | None = None  # None: no attempt noted one; MARK_NEVER_NOTED: made before marks


def conversation_of(channel_key: str, thread: str | None) -> str:
    """Where posts must keep their order: the channel, or a thread of it (a key may name its thread already,
    as a Slack thread's "slack:T:C:ts" does: a post given that thread again is still in that conversation)."""
    if not thread or channel_key.endswith(f":{thread}"):
        return channel_key
    return f"{channel_key}#{thread}"


def platform_of(channel_key: str) -> str:
    return channel_key.partition(":")[0]


# The oldest waiting entry of its conversation, on one of the platforms given: the only one that may go.
_FIRST_IN_LINE = (
    "o.status = 'waiting' AND o.platform IN ({platforms}) "
    "AND o.id = (SELECT MIN(p.id) FROM outbox p WHERE p.conversation = o.conversation AND p.status = 'waiting')"
)


def _first_in_line(platforms: Sequence[str]) -> str:
    return _FIRST_IN_LINE.format(platforms=", ".join("?" * len(platforms)))


async def add_in(
    tx: Tx,
    channel_key: str,
    thread: str | None,
    kind: str,
    payload: dict[str, Any],
    *,
    dedupe: str | None = None,
    conversation: str | None = None,
    now: float | None = None,
    claimer: str | None = None,
    lease_seconds: float = 0.0,
) -> int | None:
    """Queue one post; None when an entry with the same `dedupe` key was queued before. Entries of one
    `conversation` (by default the channel and thread) are sent in order. With `claimer`, the process
    that queued it holds it for `lease_seconds` first: it sends what it queued, unless it dies."""
    at = time.time() if now is None else now
    row = await tx.fetch_one(
        "INSERT INTO outbox (conversation, platform, channel_key, thread, kind, payload, dedupe, created_at, "
        "next_try_at, claimed_by, claimed_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (dedupe) DO NOTHING RETURNING id",
        (
            conversation or conversation_of(channel_key, thread),
            platform_of(channel_key),
            channel_key,
            thread,
            kind,
            json.dumps(payload),
            dedupe,
            at,
            at,
            claimer,
            at + lease_seconds if claimer is not None else None,
        ),
    )
    return int(row[0]) if row else None


async def claim_due(
    db: Database, claimer: str, platforms: Sequence[str], *, lease_seconds: float, limit: int = 50
) -> list[Entry]:
    """The oldest waiting entry of each conversation on `platforms` that is due and not claimed by
    another's live lease, claimed by `claimer` for `lease_seconds`."""
    if not platforms:
        return []
    now = time.time()
    rows = await db.fetch_all(
        f"SELECT o.id FROM outbox o WHERE {_first_in_line(platforms)} AND o.next_try_at <= ? "
        "AND (o.claimed_until IS NULL OR o.claimed_until < ? OR o.claimed_by = ?) ORDER BY o.id LIMIT ?",
        (*platforms, now, now, claimer, limit),
    )
    claimed: list[Entry] = []
    for row in rows:
        async with db.transaction() as tx:
            taken = await tx.fetch_one(
                "UPDATE outbox SET claimed_by = ?, claimed_until = ? WHERE id = ? AND status = 'waiting' "
                "AND (claimed_until IS NULL OR claimed_until < ? OR claimed_by = ?) RETURNING *",
                (claimer, now + lease_seconds, row[0], now, claimer),
            )
        if taken is not None:
            claimed.append(_entry(taken))
    return claimed


async def next_due_at(db: Database, claimer: str, platforms: Sequence[str]) -> float | None:
    """When `claimer` may next send something on `platforms`: the next try of an entry first in line
    that it is not sending already, or the end of another's lease on it."""
    if not platforms:
        return None
    row = await db.fetch_one(
        "SELECT MIN(CASE WHEN o.claimed_until IS NOT NULL AND o.claimed_by <> ? AND o.claimed_until > o.next_try_at "
        f"THEN o.claimed_until ELSE o.next_try_at END) FROM outbox o WHERE {_first_in_line(platforms)} "
        "AND NOT (o.claimed_by = ? AND o.in_flight_since IS NOT NULL AND o.claimed_until >= ?)",
        (claimer, *platforms, claimer, time.time()),
    )
    return float(row[0]) if row and row[0] is not None else None


async def mark_in_flight(db: Database, entry_id: int, claimer: str, lease_seconds: float) -> bool:
    """Before the platform call: from now until it is recorded, its outcome is unknown (an earlier
    unknown attempt keeps its time, so the look for what it posted goes back far enough). False when
    the claim was lost (another process took the entry over)."""
    now = time.time()
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE outbox SET in_flight_since = COALESCE(in_flight_since, ?), attempts = attempts + 1, "
            "claimed_until = ? WHERE id = ? AND claimed_by = ? AND status = 'waiting'",
            (now, now + lease_seconds, entry_id, claimer),
        )
    return changed == 1


async def keep_look_back_mark(db: Database, entry_id: int, claimer: str, mark: int) -> bool:
    """Before an attempt's platform call: where the look for what this and later attempts posted
    begins, for whichever process makes the next attempt. False when the claim was lost."""
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE outbox SET look_back_mark = ? WHERE id = ? AND claimed_by = ? AND status = 'waiting'",
            (mark, entry_id, claimer),
        )
    return changed == 1


async def renew_lease(db: Database, entry_id: int, claimer: str, lease_seconds: float) -> bool:
    """While a send takes long (the SDKs wait out rate limits themselves): still ours for `lease_seconds`."""
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE outbox SET claimed_until = ? WHERE id = ? AND claimed_by = ? AND status = 'waiting'",
            (time.time() + lease_seconds, entry_id, claimer),
        )
    return changed == 1


async def mark_sent(db: Database, entry_id: int, sent_ref: str | None) -> None:
    async with db.transaction() as tx:
        await tx.execute(
            "UPDATE outbox SET status = 'sent', sent_ref = ?, finished_at = ?, in_flight_since = NULL, "
            "claimed_by = NULL, claimed_until = NULL, error = NULL WHERE id = ?",
            (sent_ref, time.time(), entry_id),
        )


async def retry_later(db: Database, entry_id: int, claimer: str, at: float, error: str, *, unknown: bool) -> None:
    """Tried again at `at`; `unknown`: the attempts so far may have posted some of it, so the next one
    looks first. Nothing changes when another process has taken the entry over meanwhile."""
    async with db.transaction() as tx:
        await tx.execute(
            "UPDATE outbox SET next_try_at = ?, error = ?, in_flight_since = CASE WHEN ? THEN in_flight_since END, "
            "claimed_by = NULL, claimed_until = NULL WHERE id = ? AND status = 'waiting' AND claimed_by = ?",
            (at, error, unknown, entry_id, claimer),
        )


async def mark_failed(db: Database, entry_id: int, error: str) -> bool:
    """True when this call failed it (so the approvers are told once)."""
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE outbox SET status = 'failed', error = ?, finished_at = ?, in_flight_since = NULL, "
            "claimed_by = NULL, claimed_until = NULL WHERE id = ? AND status = 'waiting'",
            (error, time.time(), entry_id),
        )
    return changed == 1


async def lease_holders(db: Database, claimer: str, now: float) -> list[str]:
    """The other processes holding a live lease on a waiting entry."""
    rows = await db.fetch_all(
        "SELECT DISTINCT claimed_by FROM outbox WHERE status = 'waiting' AND claimed_until >= ? AND claimed_by <> ?",
        (now, claimer),
    )
    return [str(row[0]) for row in rows]


async def release_claims_of(db: Database, holder: str) -> int:
    """The leases of a process that is gone, given up: its waiting entries may be sent by another now."""
    async with db.transaction() as tx:
        return await tx.execute(
            "UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE status = 'waiting' AND claimed_by = ?",
            (holder,),
        )


async def release_claims(db: Database) -> int:
    """Every lease given up (at start-up, by the one process that owns an SQLite file)."""
    async with db.transaction() as tx:
        return await tx.execute(
            "UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE status = 'waiting' AND claimed_by IS NOT NULL"
        )


async def forget_sent(db: Database, older_than_seconds: float) -> int:
    """Sent entries finished longer ago than that, deleted (a task's plan kept: its later edits find the
    message through its first entry)."""
    async with db.transaction() as tx:
        return await tx.execute(
            "DELETE FROM outbox WHERE status = 'sent' AND kind <> 'plan' AND finished_at < ?",
            (time.time() - older_than_seconds,),
        )


async def get(db: Database, entry_id: int) -> Entry | None:
    row = await db.fetch_one("SELECT * FROM outbox WHERE id = ?", (entry_id,))
    return _entry(row) if row else None


async def listed(db: Database, status: str, *, channel_key: str | None = None, limit: int = 20) -> list[Entry]:
    """Entries in `status` ('waiting' oldest first, 'failed' newest first), of one channel or all."""
    order = "ASC" if status == "waiting" else "DESC"
    where, params = "status = ?", [status]
    if channel_key is not None:
        where += " AND channel_key = ?"
        params.append(channel_key)
    rows = await db.fetch_all(f"SELECT * FROM outbox WHERE {where} ORDER BY id {order} LIMIT ?", (*params, limit))
    return [_entry(row) for row in rows]


async def counts(
    db: Database, *, channel_key: str | None = None, statuses: tuple[str, ...] = ("waiting", "sent", "failed")
) -> dict[str, int]:
    """How many entries wait, were sent and failed (of `statuses`: sent ones are never deleted, so a
    frequent caller leaves them out)."""
    where = f"WHERE status IN ({', '.join('?' * len(statuses))})"
    params: tuple[str, ...] = statuses
    if channel_key is not None:
        where, params = f"{where} AND channel_key = ?", (*statuses, channel_key)
    rows = await db.fetch_all(f"SELECT status, COUNT(*) FROM outbox {where} GROUP BY status", params)
    found = {str(row[0]): int(row[1]) for row in rows}
    return {status: found.get(status, 0) for status in statuses}


def _entry(row: Row) -> Entry:
    return Entry(
        id=int(row["id"]),
        channel_key=row["channel_key"],
        thread=row["thread"],
        kind=row["kind"],
        payload=json.loads(row["payload"]),
        status=row["status"],
        created_at=float(row["created_at"]),
        attempts=int(row["attempts"]),
        next_try_at=float(row["next_try_at"]),
        in_flight_since=None if row["in_flight_since"] is None else float(row["in_flight_since"]),
        sent_ref=row["sent_ref"],
        error=row["error"],
        look_back_mark=None if row["look_back_mark"] is None else int(row["look_back_mark"]),
    )
