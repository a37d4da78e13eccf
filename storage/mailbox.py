"""The mailbox: private notes from one persona to another, bounded per recipient, and the drops.

A note is stored twice in one transaction: as a row of `notes` (who, to whom, what, and whether it
was delivered) and as a marked line in the recipient's history alone (a delivery to that persona
only, like a tool result), which is how it reaches the recipient's prompt. It is *pending* until it
is delivered: until a turn of the recipient's has run with the note in its prompt
(`mark_delivered`). At most `max_pending` notes wait for one recipient in a channel; a note past
that is dropped (never stored) and counted in `note_drops`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from storage.database import Database, Row
from storage.history import insert_private_line
from storage.records import Line, LineKind

# A note's line in the recipient's history has author id "note:<sender id>" and the sender's name.
NOTE_AUTHOR_PREFIX = "note:"


def is_note(line: Line) -> bool:
    return line.kind is LineKind.MARKER and line.author_id.startswith(NOTE_AUTHOR_PREFIX)


def has_room(pending: int, max_pending: int) -> bool:
    """Whether one more note may wait for a recipient who has `pending` undelivered notes.
    Past `max_pending` a note is dropped rather than waited on: delivery never blocks the sender."""
    return pending < max_pending


@dataclass(frozen=True, slots=True)
class Note:
    id: int
    channel_key: str
    sender_id: str
    recipient_id: str
    text: str
    sent_at: float
    delivered_at: float | None  # None while pending

    @property
    def pending(self) -> bool:
        return self.delivered_at is None


@dataclass(frozen=True, slots=True)
class Posted:
    """What became of a note: stored (`note`), or dropped because the recipient's mailbox was full."""

    note: Note | None
    pending: int  # the recipient's undelivered notes now, this one included when stored
    dropped: int  # the recipient's dropped notes in this channel so far, this one included when dropped


def _note(row: Row) -> Note:
    return Note(
        id=row["id"],
        channel_key=row["channel_key"],
        sender_id=row["sender_id"],
        recipient_id=row["recipient_id"],
        text=row["text"],
        sent_at=row["sent_at"],
        delivered_at=row["delivered_at"],
    )


async def post_note(
    db: Database,
    channel_key: str,
    *,
    sender_id: str,
    sender_name: str,
    recipient_id: str,
    text: str,
    max_pending: int,
) -> Posted:
    """Store a note for its recipient, or drop and count it when `max_pending` already wait."""
    now = time.time()
    async with db.transaction() as tx:
        # One sender at a time per mailbox, so two notes cannot both take its last place.
        await tx.serialize(f"mailbox:{channel_key}:{recipient_id}")
        row = await tx.fetch_one(
            "SELECT COUNT(*) FROM notes WHERE channel_key = ? AND recipient_id = ? AND delivered_at IS NULL",
            (channel_key, recipient_id),
        )
        pending = int(row[0]) if row else 0
        if not has_room(pending, max_pending):
            counted = await tx.fetch_one(
                "INSERT INTO note_drops (channel_key, recipient_id, dropped, last_dropped_at) VALUES (?, ?, 1, ?) "
                "ON CONFLICT (channel_key, recipient_id) DO UPDATE SET dropped = note_drops.dropped + 1, "
                "last_dropped_at = excluded.last_dropped_at RETURNING dropped",
                (channel_key, recipient_id, now),
            )
            return Posted(None, pending, int(counted[0]) if counted else 1)
        line = await insert_private_line(
            tx,
            Line(0, channel_key, LineKind.MARKER, f"{NOTE_AUTHOR_PREFIX}{sender_id}", sender_name, text, now),
            recipient_id,
        )
        stored = await tx.fetch_one(
            "INSERT INTO notes (channel_key, sender_id, recipient_id, text, line_id, sent_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
            (channel_key, sender_id, recipient_id, text, line.id, now),
        )
        assert stored is not None
        dropped = await tx.fetch_one(
            "SELECT dropped FROM note_drops WHERE channel_key = ? AND recipient_id = ?", (channel_key, recipient_id)
        )
    return Posted(_note(stored), pending + 1, int(dropped[0]) if dropped else 0)


async def mark_delivered(db: Database, channel_key: str, recipient_id: str, line_ids: Sequence[int]) -> int:
    """The notes behind these history lines reached the recipient in a turn; how many were pending."""
    if not line_ids:
        return 0
    marks = ", ".join("?" for _ in line_ids)
    async with db.transaction() as tx:
        return await tx.execute(
            f"UPDATE notes SET delivered_at = ? WHERE channel_key = ? AND recipient_id = ? "
            f"AND delivered_at IS NULL AND line_id IN ({marks})",
            (time.time(), channel_key, recipient_id, *line_ids),
        )


async def recent_notes(db: Database, channel_key: str, *, limit: int) -> list[Note]:
    """The channel's newest notes, oldest first."""
    rows = await db.fetch_all(
        "SELECT * FROM notes WHERE channel_key = ? ORDER BY id DESC LIMIT ?", (channel_key, limit)
    )
    return [_note(row) for row in reversed(rows)]


async def note_counts(db: Database, channel_key: str) -> dict[str, tuple[int, int]]:
    """Per recipient in the channel: (undelivered notes, dropped notes)."""
    counts: dict[str, tuple[int, int]] = {}
    for row in await db.fetch_all(
        "SELECT recipient_id, COUNT(*) AS pending FROM notes "
        "WHERE channel_key = ? AND delivered_at IS NULL GROUP BY recipient_id",
        (channel_key,),
    ):
        counts[row["recipient_id"]] = (int(row["pending"]), 0)
    for row in await db.fetch_all("SELECT recipient_id, dropped FROM note_drops WHERE channel_key = ?", (channel_key,)):
        counts[row["recipient_id"]] = (counts.get(row["recipient_id"], (0, 0))[0], int(row["dropped"]))
    return counts
