"""Runs a stop cut short, as start-up takes them over: it looks up whether each happened and
finishes it; the audit entry of how it ended names start-up recovery as its actor."""

from __future__ import annotations

from storage.approvals import finish, get
from storage.database import Database, Row
from storage.records import Approval

RECOVERY = "start-up recovery"  # the actor of the audit entry of a run start-up finished


async def reclaim_run(db: Database, approval_id: int, gone: str, runner: str) -> float | None:
    """A run the process `gone` started and never confirmed, taken over by `runner` to find out
    whether it happened (and to finish it): when the cut run began. None when it is no longer
    that process's run (another process took it first)."""
    async with db.transaction() as tx:
        row: Row | None = await tx.fetch_one(
            "UPDATE approvals SET runner = ? WHERE id = ? AND status = 'running' AND runner = ? "
            "RETURNING started_at, requested_at",
            (runner, approval_id, gone),
        )
    if row is None:
        return None
    return float(row["started_at"] if row["started_at"] is not None else row["requested_at"])


async def finish_recovered(db: Database, approval_id: int, *, ok: bool, result: str) -> Approval | None:
    """The outcome of a run start-up took over, once, audited with how recovery went (in `result`)."""
    return await finish(db, approval_id, ok=ok, result=result, actor=RECOVERY)


async def recovered(db: Database, channel_key: str, since: float) -> list[Approval]:
    """The channel's runs start-up finished since `since`, oldest first."""
    rows = await db.fetch_all(
        "SELECT id FROM approvals WHERE channel_key = ? AND id IN "
        "(SELECT approval_id FROM audit_log WHERE actor = ? AND at >= ?) ORDER BY id",
        (channel_key, RECOVERY, since),
    )
    found = [await get(db, row["id"]) for row in rows]
    return [approval for approval in found if approval is not None]


async def note_mark(db: Database, approval_id: int, mark: int) -> None:
    """Where a claimed post's run stands on its platform before the post is made (an int: on Discord,
    a message id), committed at once: a look-up after a stop reads only what came after it."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE approvals SET post_mark = ? WHERE id = ? AND status = 'running'", (mark, approval_id))


async def post_mark(db: Database, approval_id: int) -> int | None:
    """The mark a claimed post's run noted before it posted; None when it noted none."""
    row: Row | None = await db.fetch_one("SELECT post_mark FROM approvals WHERE id = ?", (approval_id,))
    return None if row is None or row["post_mark"] is None else int(row["post_mark"])
