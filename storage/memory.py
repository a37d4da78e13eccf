"""What a persona keeps beyond its window: its notes (`remember`), and its running summary of the
lines that left its window, stored with the last line it covers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from storage.database import Database
from storage.history import line_of
from storage.records import Line


@dataclass(frozen=True)
class Note:
    id: int
    text: str
    created_at: float


@dataclass(frozen=True)
class Summary:
    text: str
    covers_through_line_id: int
    updated_at: float


@dataclass(frozen=True)
class Kept:
    """A note stored, and the notes dropped to make room for it (oldest first)."""

    note: Note
    dropped: tuple[Note, ...]


async def notes(db: Database, scope: str, persona_id: str) -> list[Note]:
    """The persona's notes in this scope, oldest first: note 1 is the first of them."""
    rows = await db.fetch_all(
        "SELECT id, text, created_at FROM persona_notes WHERE scope = ? AND persona_id = ? ORDER BY id",
        (scope, persona_id),
    )
    return [Note(int(r["id"]), r["text"], float(r["created_at"])) for r in rows]


async def add_note(db: Database, scope: str, persona_id: str, text: str, *, max_notes: int) -> Kept:
    """Store a note; past `max_notes`, the oldest go, in the same transaction."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "INSERT INTO persona_notes (scope, persona_id, text, created_at) VALUES (?, ?, ?, ?) "
            "RETURNING id, text, created_at",
            (scope, persona_id, text, time.time()),
        )
        assert row is not None
        kept = Note(int(row[0]), row[1], float(row[2]))
        rows = await tx.fetch_all(
            "SELECT id, text, created_at FROM persona_notes WHERE scope = ? AND persona_id = ? ORDER BY id",
            (scope, persona_id),
        )
        dropped = tuple(Note(int(r[0]), r[1], float(r[2])) for r in rows[: max(0, len(rows) - max_notes)])
        for note in dropped:
            await tx.execute("DELETE FROM persona_notes WHERE id = ?", (note.id,))
    return Kept(kept, dropped)


async def forget_note(db: Database, scope: str, persona_id: str, number: int) -> Note | None:
    """Drop note `number` (1 is the oldest kept); the note dropped, or None when there is no such note."""
    async with db.transaction() as tx:
        rows = await tx.fetch_all(
            "SELECT id, text, created_at FROM persona_notes WHERE scope = ? AND persona_id = ? ORDER BY id",
            (scope, persona_id),
        )
        if not 1 <= number <= len(rows):
            return None
        row = rows[number - 1]
        await tx.execute("DELETE FROM persona_notes WHERE id = ?", (row[0],))
    return Note(int(row[0]), row[1], float(row[2]))


async def clear(db: Database, scope: str, channel_key: str, persona_id: str) -> tuple[int, bool]:
    """Drop the persona's notes in `scope` and its summary in the channel: (notes dropped, whether a
    summary was dropped). Lines it already covered stay covered: they are not summarized again."""
    async with db.transaction() as tx:
        dropped = await tx.execute("DELETE FROM persona_notes WHERE scope = ? AND persona_id = ?", (scope, persona_id))
        emptied = await tx.execute(
            "UPDATE persona_summaries SET summary = '', updated_at = ? "
            "WHERE channel_key = ? AND persona_id = ? AND summary <> ''",
            (time.time(), channel_key, persona_id),
        )
    return dropped, bool(emptied)


async def summary(db: Database, channel_key: str, persona_id: str) -> Summary | None:
    row = await db.fetch_one(
        "SELECT summary, covers_through_line_id, updated_at FROM persona_summaries "
        "WHERE channel_key = ? AND persona_id = ?",
        (channel_key, persona_id),
    )
    return Summary(row[0], int(row[1]), float(row[2])) if row else None


async def save_summary(
    db: Database, channel_key: str, persona_id: str, text: str, *, covers_through: int, previous_through: int
) -> bool:
    """Store the summary that covers lines up to `covers_through`, in one transaction, only if the
    stored one still covers `previous_through` (what the new one was written from): an update run
    twice, or beside another process's, is stored once. Whether it was stored."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "SELECT covers_through_line_id FROM persona_summaries WHERE channel_key = ? AND persona_id = ?",
            (channel_key, persona_id),
        )
        if (int(row[0]) if row else 0) != previous_through:
            return False
        if row is None:
            await tx.execute(
                "INSERT INTO persona_summaries (channel_key, persona_id, summary, covers_through_line_id, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (channel_key, persona_id, text, covers_through, time.time()),
            )
        else:
            await tx.execute(
                "UPDATE persona_summaries SET summary = ?, covers_through_line_id = ?, updated_at = ? "
                "WHERE channel_key = ? AND persona_id = ?",
                (text, covers_through, time.time(), channel_key, persona_id),
            )
    return True


async def witnessed_count(db: Database, channel_key: str, persona_id: str, *, after_id: int, before_id: int) -> int:
    """How many lines `witnessed_between` holds: an index range counted, no line read."""
    row = await db.fetch_one(
        "SELECT COUNT(*) FROM deliveries WHERE channel_key = ? AND persona_id = ? AND line_id > ? AND line_id < ?",
        (channel_key, persona_id, after_id, before_id),
    )
    return int(row[0]) if row else 0


async def witnessed_between(
    db: Database, channel_key: str, persona_id: str, *, after_id: int, before_id: int, limit: int
) -> list[Line]:
    """The lines delivered to the persona with after_id < id < before_id, oldest first: only what
    it witnessed (a line from before it joined, or another's private note, was never delivered to it)."""
    rows = await db.fetch_all(
        "SELECT l.* FROM deliveries d JOIN lines l ON l.id = d.line_id "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id > ? AND d.line_id < ? "
        "ORDER BY d.line_id LIMIT ?",
        (channel_key, persona_id, after_id, before_id, limit),
    )
    return [line_of(row) for row in rows]


async def newest_marker(db: Database, channel_key: str, persona_id: str, opening: str, *, after_id: int) -> int | None:
    """The newest marker line delivered to the persona after `after_id` whose text starts with `opening`."""
    row = await db.fetch_one(
        # The channel's markers first (an index range: they are few), then whether each was delivered.
        # substr, not LIKE: SQLite prepares a statement again whenever a LIKE pattern's parameter is bound.
        "SELECT MAX(l.id) FROM lines l WHERE l.channel_key = ? AND l.kind = 'marker' AND l.id > ? "
        "AND substr(l.text, 1, ?) = ? "
        "AND EXISTS (SELECT 1 FROM deliveries d WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id = l.id)",
        (channel_key, after_id, len(opening), opening, channel_key, persona_id),
    )
    return int(row[0]) if row and row[0] is not None else None


async def channels_with_participants(db: Database) -> list[tuple[str, str]]:
    """(channel, persona) for every persona present in a channel: what a start-up catch-up checks."""
    rows = await db.fetch_all("SELECT channel_key, persona_id FROM participants WHERE active = 1")
    return [(r[0], r[1]) for r in rows]


def numbered(notes_kept: Sequence[Note]) -> list[str]:
    """ "1. text" for each note, as the prompt and /memory show them."""
    return [f"{number}. {note.text}" for number, note in enumerate(notes_kept, start=1)]
