"""Channel lines, each stored once and delivered to the personas present when it was said."""

from __future__ import annotations

import time

from storage.database import Database, Row, Tx
from storage.records import Line, LineKind


def _line(row: Row) -> Line:
    return Line(
        id=row["id"],
        channel_key=row["channel_key"],
        kind=LineKind(row["kind"]),
        author_id=row["author_id"],
        author_name=row["author_name"],
        text=row["text"],
        created_at=row["created_at"],
    )


async def insert_line(
    tx: Tx, channel_key: str, kind: LineKind, author_id: str, author_name: str, text: str
) -> Line:
    now = time.time()
    line_id = await _new_line_id(tx, channel_key, kind, author_id, author_name, text, now)
    await tx.execute(
        "INSERT INTO deliveries (channel_key, persona_id, line_id) "
        "SELECT channel_key, persona_id, ? FROM participants WHERE channel_key = ? AND active = 1",
        (line_id, channel_key),
    )
    return Line(line_id, channel_key, kind, author_id, author_name, text, now)


async def _new_line_id(
    tx: Tx, channel_key: str, kind: LineKind, author_id: str, author_name: str, text: str, now: float
) -> int:
    row = await tx.fetch_one(
        "INSERT INTO lines (channel_key, kind, author_id, author_name, text, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        (channel_key, kind.value, author_id, author_name, text, now),
    )
    assert row is not None
    return int(row[0])


async def append_line(
    db: Database, channel_key: str, kind: LineKind, author_id: str, author_name: str, text: str
) -> Line:
    """Store a line and deliver it to every current participant, in one transaction."""
    async with db.transaction() as tx:
        return await insert_line(tx, channel_key, kind, author_id, author_name, text)


async def set_membership(
    db: Database, channel_key: str, persona_id: str, *, active: bool, marker_text: str
) -> bool:
    """Invite (active=True) or dismiss a persona and deliver the marker line to whoever is then present.

    Returns False when nothing changed (already a participant, or not one). A dismissed persona
    keeps its deliveries; it simply receives nothing new.
    """
    now = time.time()
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "SELECT active FROM participants WHERE channel_key = ? AND persona_id = ?", (channel_key, persona_id)
        )
        if (row is not None and bool(row["active"]) == active) or (row is None and not active):
            return False
        if active:
            await tx.execute(
                "INSERT INTO participants (channel_key, persona_id, position, active, joined_at) "
                "VALUES (?, ?, (SELECT COALESCE(MAX(position), -1) + 1 FROM participants WHERE channel_key = ?), 1, ?) "
                "ON CONFLICT (channel_key, persona_id) DO UPDATE SET active = 1, position = excluded.position, "
                "joined_at = excluded.joined_at",
                (channel_key, persona_id, channel_key, now),
            )
        else:
            await tx.execute(
                "UPDATE participants SET active = 0 WHERE channel_key = ? AND persona_id = ?", (channel_key, persona_id)
            )
        await insert_line(tx, channel_key, LineKind.MARKER, "system", "system", marker_text)
    return True


async def recent_lines_for(
    db: Database, channel_key: str, persona_id: str, *, limit: int, before_id: int | None = None
) -> list[Line]:
    """The newest lines delivered to a persona, newest first: an index range scan of `limit` rows.

    Messages still waiting in the inbox are left out until their own round: each round sees the
    conversation as it stood when its message came up, whatever arrived behind it.
    """
    rows = await db.fetch_all(
        "SELECT l.* FROM deliveries d JOIN lines l ON l.id = d.line_id "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id < ? "
        "AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = d.line_id) "
        "ORDER BY d.line_id DESC LIMIT ?",
        (channel_key, persona_id, before_id if before_id is not None else 2**62, limit),
    )
    return [_line(row) for row in rows]


async def recent_channel_lines(db: Database, channel_key: str, *, limit: int) -> list[Line]:
    """The channel's newest lines, oldest first (what the moderator reads), without waiting messages."""
    rows = await db.fetch_all(
        "SELECT * FROM lines l WHERE channel_key = ? AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = l.id) "
        "ORDER BY id DESC LIMIT ?",
        (channel_key, limit),
    )
    return [_line(row) for row in reversed(rows)]


async def last_persona_speaker(db: Database, channel_key: str) -> str | None:
    row = await db.fetch_one(
        "SELECT author_id FROM lines WHERE channel_key = ? AND kind = 'persona' ORDER BY id DESC LIMIT 1",
        (channel_key,),
    )
    return row["author_id"] if row else None


async def forget_processed_events(db: Database, older_than_seconds: float) -> int:
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM processed_events WHERE seen_at < ?", (time.time() - older_than_seconds,))


async def append_private_note(db: Database, channel_key: str, persona_id: str, text: str) -> Line:
    """A note only one persona receives, such as the result of its own action."""
    now = time.time()
    async with db.transaction() as tx:
        line_id = await _new_line_id(tx, channel_key, LineKind.MARKER, "system", "system", text, now)
        await tx.execute(
            "INSERT INTO deliveries (channel_key, persona_id, line_id) VALUES (?, ?, ?)", (channel_key, persona_id, line_id)
        )
    return Line(line_id, channel_key, LineKind.MARKER, "system", "system", text, now)
