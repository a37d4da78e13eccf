"""Where each approval request was posted, and who decided it there: one storage table for every
platform (storage.approvals' request_places), so whichever process records a decision edits the
original request and shows the decider as a mention, also after a restart.

Each platform's port keeps a RequestPlaces for its own platform: a place of another platform's (a
Discord request shown on Slack buttons) is not its to edit. Storage errors are logged, never
raised: a lost row only means the outcome is posted as a new message, or names the decider instead
of mentioning them. Without a database (unit use) everything stays in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from storage import approvals
from storage.database import Database
from storage.records import RequestPlace

log = logging.getLogger(__name__)

T = TypeVar("T")
Store = Callable[[Database, int, T], Awaitable[None]]


@dataclass(frozen=True)
class Place:
    channel: str  # the platform's channel (or thread) id
    message: str  # the platform's message id: a Slack ts, a Discord snowflake


class RequestPlaces:
    def __init__(self, platform: str, db: Database | None = None) -> None:
        self.platform = platform
        self._db = db
        self._places: dict[int, Place] = {}
        self._deciders: dict[int, str] = {}

    async def remember(self, approval_id: int, place: Place) -> None:
        self._places[approval_id] = place
        await self._store(
            approval_id,
            "where approval %s was posted",
            approvals.remember_place,
            RequestPlace(self.platform, place.channel, place.message),
        )

    async def place(self, approval_id: int) -> Place | None:
        if approval_id not in self._places and (stored := await self._stored(approval_id)) is not None:
            self._places[approval_id] = Place(stored.channel, stored.message)
        return self._places.get(approval_id)

    def note_decider(self, approval_id: int, user_id: str) -> None:
        """In memory at once (no await), so a decision's outcome shown right after already knows who it was."""
        self._deciders[approval_id] = user_id

    async def save_decider(self, approval_id: int, user_id: str) -> None:
        self.note_decider(approval_id, user_id)
        await self._store(approval_id, "who decided approval %s", approvals.remember_decider, user_id)

    async def decider(self, approval_id: int) -> str | None:
        if approval_id not in self._deciders and (stored := await self._stored(approval_id)) is not None:
            if stored.decider is not None:
                self._deciders[approval_id] = stored.decider
        return self._deciders.get(approval_id)

    async def _store(self, approval_id: int, what: str, store: Store[T], value: T) -> None:
        if self._db is None:
            return
        try:
            await store(self._db, approval_id, value)
        except Exception as exc:
            log.warning("could not store %s: %s", what % approval_id, type(exc).__name__)

    async def _stored(self, approval_id: int) -> RequestPlace | None:
        """This platform's stored place of the request, if any."""
        if self._db is None:
            return None
        try:
            stored = await approvals.place_of(self._db, approval_id)
        except Exception as exc:
            log.warning("could not read where approval %s was posted: %s", approval_id, type(exc).__name__)
            return None
        return stored if stored is not None and stored.platform == self.platform else None
