"""Where approval requests are posted, and where each one was posted, so its buttons can be
replaced (chat.update) even after a restart.

The places are kept in a small SQLite file of the Slack adapter's own (data_dir/slack.sqlite3),
written through a short-lived connection in a worker thread: one row per approval, no lifecycle to
manage. Without a file (unit tests) they are kept in memory only.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from bot.slack.keys import channel_id_of
from storage.records import Approval

log = logging.getLogger(__name__)

FILE_NAME = "slack.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS approval_messages "
    "(approval_id INTEGER PRIMARY KEY, channel TEXT NOT NULL, ts TEXT NOT NULL)"
)


@dataclass(frozen=True)
class MessageRef:
    channel: str
    ts: str


def request_location(approval: Approval, approvals_channel: str) -> tuple[str | None, str | None]:
    """(channel, thread) for an approval's request: the [slack] approvals_channel when set,
    else the thread of the request in its own channel. channel is None for a non-Slack key."""
    if approvals_channel:
        return approvals_channel.lstrip("#"), None
    return channel_id_of(approval.channel_key), approval.thread


class ApprovalMessages:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._known: dict[int, MessageRef] = {}

    async def remember(self, approval_id: int, ref: MessageRef) -> None:
        """Never raises: a lost row only means the decision is posted as a new message instead."""
        self._known[approval_id] = ref
        if self.path is None:
            return
        try:
            await asyncio.to_thread(self._write, approval_id, ref)
        except (sqlite3.Error, OSError) as exc:
            log.warning("could not store where approval %s was posted: %s", approval_id, type(exc).__name__)

    async def find(self, approval_id: int) -> MessageRef | None:
        if approval_id in self._known or self.path is None:
            return self._known.get(approval_id)
        try:
            return await asyncio.to_thread(self._read, approval_id)
        except (sqlite3.Error, OSError) as exc:
            log.warning("could not read where approval %s was posted: %s", approval_id, type(exc).__name__)
            return None

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10)
        connection.execute(_SCHEMA)
        return connection

    def _write(self, approval_id: int, ref: MessageRef) -> None:
        with closing(self._connect()) as connection, connection:  # the inner `with` commits
            connection.execute(
                "INSERT OR REPLACE INTO approval_messages (approval_id, channel, ts) VALUES (?, ?, ?)",
                (approval_id, ref.channel, ref.ts),
            )

    def _read(self, approval_id: int) -> MessageRef | None:
        with closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT channel, ts FROM approval_messages WHERE approval_id = ?", (approval_id,)
            ).fetchone()
        return MessageRef(row[0], row[1]) if row else None
