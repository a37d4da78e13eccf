"""The inbox: human lines waiting for their round, answered in line order by whichever process gets there.

A line enters the inbox in the same transaction that records it, so an event acknowledged to the
platform is never lost: a round that had not started when the bot stopped runs at the next start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from storage.channels import Place, create_in
from storage.database import Database, Row
from storage.events import claim_in
from storage.history import insert_line
from storage.locks import inbox_lock
from storage.records import Line, LineKind

NewChannel = tuple[Sequence[str], bool, Place | None]
"""participants, moderated: how a channel starts; where it sits, when known"""


def session_marker(last_at: float | None, now: float, gap_seconds: float) -> str | None:
    """The marker that opens a new session, when the channel was silent for `gap_seconds` or more
    before a line at `now` (and had a line before); else None."""
    if last_at is None or gap_seconds <= 0 or now - last_at < gap_seconds:
        return None
    return f"New session ({datetime.fromtimestamp(now, UTC):%A %d %B %Y, %H:%M} UTC)"


SESSION_ENDED = "Session ended"


def session_end_marker(last_at: float) -> str:
    """The marker that closes the session whose last line was at `last_at`, just before the next one opens."""
    return f"{SESSION_ENDED} ({datetime.fromtimestamp(last_at, UTC):%A %d %B %Y, %H:%M} UTC)"


@dataclass(frozen=True)
class Waiting:
    """A recorded human line whose round has not run."""

    line_id: int
    channel_key: str
    author_name: str
    text: str
    mentions: tuple[str, ...]
    thread: str | None
    event_id: str | None = None  # the platform's id of the message


async def accept(
    db: Database,
    event_id: str | None,
    channel_key: str,
    author_id: str,
    author_name: str,
    text: str,
    *,
    mentions: Sequence[str] = (),
    thread: str | None = None,
    queue: bool = True,
    new_channel: NewChannel | None = None,
    session_gap_seconds: float = 0,
) -> Line | None:
    """Record a human line and, with `queue`, its round, unless its platform event was seen before (then None).
    Without `queue` the line is only delivered to the personas present: they see it in later rounds.
    With `new_channel`, a channel not stored yet is created in the same transaction. After
    `session_gap_seconds` of silence (0: never), markers that end the last session and open a new one
    come first, delivered like the line."""
    async with db.transaction(urgent=True) as tx:  # the platform waits for this to acknowledge it
        if event_id is not None and not await claim_in(tx, event_id):
            return None
        if new_channel is not None:
            participants, moderated, place = new_channel
            await create_in(tx, channel_key, participants=participants, moderated=moderated, place=place)
        # Line ids must commit in order within a channel, or a reader could see a later line first.
        await tx.serialize(inbox_lock(channel_key))
        if session_gap_seconds:
            last = await tx.fetch_one(
                "SELECT created_at FROM lines WHERE channel_key = ? ORDER BY id DESC LIMIT 1", (channel_key,)
            )
            marker = session_marker(float(last[0]) if last else None, time.time(), session_gap_seconds)
            if marker and last:
                # The end closes what each persona's summary folds in whole (graph/memory.py).
                await insert_line(tx, channel_key, LineKind.MARKER, "system", "system", session_end_marker(last[0]))
                await insert_line(tx, channel_key, LineKind.MARKER, "system", "system", marker)
        line = await insert_line(tx, channel_key, LineKind.HUMAN, author_id, author_name, text)
        if not queue:
            return line
        await tx.execute(
            "INSERT INTO inbox (line_id, channel_key, mentions, thread, event_id) VALUES (?, ?, ?, ?, ?)",
            (line.id, channel_key, json.dumps(list(mentions)), thread, event_id),
        )
    return line


async def oldest(db: Database, channel_key: str) -> Waiting | None:
    row = await db.fetch_one(
        "SELECT i.line_id, i.mentions, i.thread, i.event_id, l.author_name, l.text FROM inbox i JOIN lines l ON l.id = i.line_id "
        "WHERE i.channel_key = ? ORDER BY i.line_id LIMIT 1",
        (channel_key,),
    )
    return _waiting(row, channel_key) if row else None


async def oldest_after(db: Database, channel_key: str, line_id: int) -> Waiting | None:
    row = await db.fetch_one(
        "SELECT i.line_id, i.mentions, i.thread, i.event_id, l.author_name, l.text FROM inbox i JOIN lines l ON l.id = i.line_id "
        "WHERE i.channel_key = ? AND i.line_id > ? ORDER BY i.line_id LIMIT 1",
        (channel_key, line_id),
    )
    return _waiting(row, channel_key) if row else None


def _waiting(row: Row, channel_key: str) -> Waiting:
    return Waiting(
        line_id=row["line_id"],
        channel_key=channel_key,
        author_name=row["author_name"],
        text=row["text"],
        mentions=tuple(json.loads(row["mentions"])),
        thread=row["thread"],
        event_id=row["event_id"],
    )


async def channels_waiting(db: Database) -> list[str]:
    rows = await db.fetch_all("SELECT DISTINCT channel_key FROM inbox ORDER BY channel_key")
    return [row["channel_key"] for row in rows]
