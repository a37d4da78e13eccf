"""Where approval requests are posted, and where each one was posted, so its buttons can be
replaced (chat.update) after a restart, or by another process sharing the database.

The places are stored with the approvals (storage.approvals.remember_place); in unit tests
without a database they are kept in memory only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.slack.keys import channel_id_of
from storage import approvals
from storage.database import Database
from storage.records import Approval

log = logging.getLogger(__name__)


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
    def __init__(self, db: Database | None = None) -> None:
        self._db = db
        self._known: dict[int, MessageRef] = {}

    async def remember(self, approval_id: int, ref: MessageRef) -> None:
        """Never raises: a lost row only means the decision is posted as a new message instead."""
        self._known[approval_id] = ref
        if self._db is None:
            return
        try:
            await approvals.remember_place(self._db, approval_id, ref.channel, ref.ts)
        except Exception as exc:
            log.warning("could not store where approval %s was posted: %s", approval_id, type(exc).__name__)

    async def find(self, approval_id: int) -> MessageRef | None:
        if approval_id in self._known or self._db is None:
            return self._known.get(approval_id)
        try:
            place = await approvals.place_of(self._db, approval_id)
        except Exception as exc:
            log.warning("could not read where approval %s was posted: %s", approval_id, type(exc).__name__)
            return None
        return MessageRef(*place) if place else None
