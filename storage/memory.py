"""What a persona keeps beyond its window: its notes (`remember`), and its running summary of the
lines that left its window, stored with the last line it covers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from storage.database import Database, Tx
from storage.history import line_of
from storage.records import Line

Reader = Database | Tx  # a query run on its own or inside the caller's transaction


@dataclass(frozen=True)
class Audience:
    """Who can read a channel, as its adapter recorded it: its tenant ("slack:T1", "discord:<guild>",
    "console"; "" when not recorded) and whether it is private (not known yet counts as private)."""

    key: str
    tenant: str = ""
    private: bool = True


@dataclass(frozen=True)
class NoteScope:
    """The notes a persona keeps in channel `here`: those taken in it and, when `shared`, those taken
    in the other channels of its tenant that everyone there can read (graph/memory.note_scope)."""

    here: str
    shared: bool = False


@dataclass(frozen=True)
class Note:
    id: int
    text: str
    created_at: float
    taken_in: Audience = Audience("")


@dataclass(frozen=True)
class Summary:
    text: str
    covers_through_line_id: int
    updated_at: float
    version: int = 0  # bumped by each correction: an update written from an older version is not stored


@dataclass(frozen=True)
class Kept:
    """A note stored, and the notes dropped to make room for it (oldest first)."""

    note: Note
    dropped: tuple[Note, ...]


def seen_from(taken_in: Audience, here: Audience, *, shared: bool) -> bool:
    """Whether a note taken in `taken_in` is shown, and given to a prompt, in `here`: in its own
    channel always; elsewhere only when notes are shared, both channels are of one recorded tenant,
    and everyone there can read the channel it was taken in (a private channel's notes stay in it)."""
    if taken_in.key == here.key:
        return True
    return shared and bool(here.tenant) and taken_in.tenant == here.tenant and not taken_in.private


async def audience(reader: Reader, key: str) -> Audience:
    """The channel's tenant and privacy as recorded (storage/channels.py); nothing known: private, alone."""
    row = await reader.fetch_one("SELECT tenant, private FROM channels WHERE key = ?", (key,))
    if row is None:
        return Audience(key)
    return Audience(key, str(row[0] or ""), row[1] is None or bool(row[1]))


async def _seen(reader: Reader, scope: NoteScope, persona_id: str) -> list[Note]:
    """The persona's notes seen in scope.here, oldest first: note 1 is the first of them."""
    here = await audience(reader, scope.here)
    rows = await reader.fetch_all(
        "SELECT n.id, n.text, n.created_at, n.channel_key, c.tenant, c.private FROM persona_notes n "
        "LEFT JOIN channels c ON c.key = n.channel_key "
        "WHERE n.persona_id = ? AND (n.channel_key = ? OR (? = 1 AND c.tenant = ? AND c.tenant <> '')) ORDER BY n.id",
        (persona_id, scope.here, int(scope.shared), here.tenant),
    )
    found = [
        Note(
            int(r[0]),
            r[1],
            float(r[2]),
            Audience(r[3], str(r[4] or ""), r[5] is None or bool(r[5])),
        )
        for r in rows
    ]
    return [note for note in found if seen_from(note.taken_in, here, shared=scope.shared)]


async def notes(db: Database, scope: NoteScope, persona_id: str) -> list[Note]:
    """The persona's notes seen in the scope's channel, oldest first: note 1 is the first of them."""
    return await _seen(db, scope, persona_id)


async def add_note(db: Database, scope: NoteScope, persona_id: str, text: str, *, max_notes: int) -> Kept:
    """Store a note taken in scope.here; past `max_notes` seen there, the oldest of those go, in the
    same transaction (never a note this channel cannot see)."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "INSERT INTO persona_notes (scope, channel_key, persona_id, text, created_at) VALUES (?, ?, ?, ?, ?) "
            "RETURNING id, text, created_at",
            (scope.here, scope.here, persona_id, text, time.time()),
        )
        assert row is not None
        kept = Note(int(row[0]), row[1], float(row[2]), await audience(tx, scope.here))
        seen = await _seen(tx, scope, persona_id)
        dropped = tuple(seen[: max(0, len(seen) - max_notes)])
        for note in dropped:
            await tx.execute("DELETE FROM persona_notes WHERE id = ?", (note.id,))
    return Kept(kept, dropped)


async def forget_note(db: Database, scope: NoteScope, persona_id: str, number: int) -> Note | None:
    """Drop note `number` of those seen here (1 is the oldest kept); the note dropped, or None when
    there is no such note."""
    async with db.transaction() as tx:
        seen = await _seen(tx, scope, persona_id)
        if not 1 <= number <= len(seen):
            return None
        note = seen[number - 1]
        await tx.execute("DELETE FROM persona_notes WHERE id = ?", (note.id,))
        await _correct(tx, scope.here, persona_id, emptied=False)
    return note


async def clear(db: Database, scope: NoteScope, persona_id: str) -> tuple[int, bool]:
    """Drop the persona's notes seen in scope.here and empty its summary there: (notes dropped, whether
    a summary was dropped). The summary's version is bumped, so an update under way stores nothing,
    and every line delivered so far counts as covered: none of it is folded in again."""
    async with db.transaction() as tx:
        seen = await _seen(tx, scope, persona_id)
        for note in seen:
            await tx.execute("DELETE FROM persona_notes WHERE id = ?", (note.id,))
        emptied = await _correct(tx, scope.here, persona_id, emptied=True)
    return len(seen), emptied


async def _correct(tx: Tx, channel_key: str, persona_id: str, *, emptied: bool) -> bool:
    """Bump the summary's version (creating its row when none yet); with `emptied`, empty it and cover
    every line delivered to the persona here. Whether a summary's text was dropped."""
    row = await tx.fetch_one(
        "SELECT summary FROM persona_summaries WHERE channel_key = ? AND persona_id = ?", (channel_key, persona_id)
    )
    newest = await tx.fetch_one(
        "SELECT COALESCE(MAX(line_id), 0) FROM deliveries WHERE channel_key = ? AND persona_id = ?",
        (channel_key, persona_id),
    )
    through = int(newest[0]) if newest and emptied else 0
    if row is None:
        await tx.execute(
            "INSERT INTO persona_summaries (channel_key, persona_id, summary, covers_through_line_id, updated_at, "
            "version) VALUES (?, ?, '', ?, ?, 1)",
            (channel_key, persona_id, through, time.time()),
        )
        return False
    if emptied:
        await tx.execute(
            "UPDATE persona_summaries SET summary = '', version = version + 1, updated_at = ?, "
            "covers_through_line_id = CASE WHEN covers_through_line_id > ? THEN covers_through_line_id ELSE ? END "
            "WHERE channel_key = ? AND persona_id = ?",
            (time.time(), through, through, channel_key, persona_id),
        )
    else:
        await tx.execute(
            "UPDATE persona_summaries SET version = version + 1 WHERE channel_key = ? AND persona_id = ?",
            (channel_key, persona_id),
        )
    return emptied and bool(row[0])


async def summary(db: Database, channel_key: str, persona_id: str) -> Summary | None:
    row = await db.fetch_one(
        "SELECT summary, covers_through_line_id, updated_at, version FROM persona_summaries "
        "WHERE channel_key = ? AND persona_id = ?",
        (channel_key, persona_id),
    )
    return Summary(row[0], int(row[1]), float(row[2]), int(row[3])) if row else None


async def save_summary(
    db: Database,
    channel_key: str,
    persona_id: str,
    text: str,
    *,
    covers_through: int,
    previous_through: int,
    previous_version: int = 0,
) -> bool:
    """Store the summary that covers lines up to `covers_through`, in one transaction, only if the
    stored one still covers `previous_through` at `previous_version` (what the new one was written
    from): an update run twice, or beside another process's, is stored once, and one written before
    a correction (/memory clear, forget) is not stored at all. Whether it was stored."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "SELECT covers_through_line_id, version FROM persona_summaries WHERE channel_key = ? AND persona_id = ?",
            (channel_key, persona_id),
        )
        if ((int(row[0]), int(row[1])) if row else (0, 0)) != (previous_through, previous_version):
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
