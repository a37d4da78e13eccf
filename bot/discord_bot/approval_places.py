"""Where each approval request was posted, and which Discord user decided it, kept across restarts.

A small SQLite file of the Discord adapter's own (data_dir/discord.sqlite3), so that a decision
made after a restart (a click on an old button, or an expiry) still edits the original request,
and shows the decider as a mention. Storage errors are logged and never raised: a lost row only
means the outcome is posted as a new message, or shows the decider's name instead of a mention.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

log = logging.getLogger(__name__)

FILE_NAME = "discord.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS approval_messages (
    approval_id INTEGER PRIMARY KEY, channel_id INTEGER NOT NULL, message_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS approval_deciders (approval_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL);
"""


@dataclass(frozen=True)
class Place:
    channel_id: int  # a channel or a thread
    message_id: int


class ApprovalPlaces:
    """Without a connection (unit use) everything stays in memory."""

    def __init__(self, conn: aiosqlite.Connection | None = None) -> None:
        self._conn = conn
        self._places: dict[int, Place] = {}
        self._deciders: dict[int, int] = {}

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path) -> AsyncIterator[ApprovalPlaces]:
        path.parent.mkdir(parents=True, exist_ok=True)
        async with aiosqlite.connect(path, isolation_level=None) as conn:
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.executescript(_SCHEMA)
            yield cls(conn)

    async def remember(self, approval_id: int, place: Place) -> None:
        self._places[approval_id] = place
        await self._write(
            "INSERT OR REPLACE INTO approval_messages (approval_id, channel_id, message_id) VALUES (?, ?, ?)",
            (approval_id, place.channel_id, place.message_id),
        )

    async def place(self, approval_id: int) -> Place | None:
        if approval_id not in self._places:
            sql = "SELECT channel_id, message_id FROM approval_messages WHERE approval_id = ?"
            row = await self._read(sql, approval_id)
            if row is not None:
                self._places[approval_id] = Place(int(row[0]), int(row[1]))
        return self._places.get(approval_id)

    def note_decider(self, approval_id: int, user_id: int) -> None:
        """In memory at once (no await), so a decision's outcome shown right after already knows who it was."""
        self._deciders[approval_id] = user_id

    async def save_decider(self, approval_id: int, user_id: int) -> None:
        self.note_decider(approval_id, user_id)
        await self._write(
            "INSERT OR REPLACE INTO approval_deciders (approval_id, user_id) VALUES (?, ?)", (approval_id, user_id)
        )

    async def decider(self, approval_id: int) -> int | None:
        if approval_id not in self._deciders:
            row = await self._read("SELECT user_id FROM approval_deciders WHERE approval_id = ?", approval_id)
            if row is not None:
                self._deciders[approval_id] = int(row[0])
        return self._deciders.get(approval_id)

    async def _write(self, sql: str, params: tuple[int, ...]) -> None:
        if self._conn is None:
            return
        try:
            await self._conn.execute(sql, params)
        except (sqlite3.Error, ValueError) as exc:
            log.warning("could not store approval %s's Discord message: %s", params[0], type(exc).__name__)

    async def _read(self, sql: str, approval_id: int) -> sqlite3.Row | tuple[int, ...] | None:
        if self._conn is None:
            return None
        try:
            async with self._conn.execute(sql, (approval_id,)) as cursor:
                return await cursor.fetchone()
        except (sqlite3.Error, ValueError) as exc:
            log.warning("could not read approval %s's Discord message: %s", approval_id, type(exc).__name__)
            return None
