"""Where each Discord approval request was posted, and which Discord user decided it.

Both live with the approvals in storage (approval_places, approval_deciders), so whichever process
records a decision edits the original request and shows the decider as a mention. A Discord place
is stored as "discord:<channel id>"; a place of another platform's (a request shown on Slack
buttons) is not ours to edit. Storage errors are logged, never raised: a lost row only means the
outcome is posted as a new message, or shows the decider's name instead of a mention.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from storage import approvals
from storage.database import Database

log = logging.getLogger(__name__)

PLATFORM = "discord"


@dataclass(frozen=True)
class Place:
    channel_id: int  # a channel or a thread
    message_id: int


class ApprovalPlaces:
    """Without a database (unit use) everything stays in memory."""

    def __init__(self, db: Database | None = None) -> None:
        self._db = db
        self._places: dict[int, Place] = {}
        self._deciders: dict[int, int] = {}

    async def remember(self, approval_id: int, place: Place) -> None:
        self._places[approval_id] = place
        if self._db is not None:
            try:
                await approvals.remember_place(
                    self._db, approval_id, f"{PLATFORM}:{place.channel_id}", str(place.message_id)
                )
            except Exception as exc:
                log.warning("could not store approval %s's Discord message: %s", approval_id, type(exc).__name__)

    async def place(self, approval_id: int) -> Place | None:
        if approval_id not in self._places and self._db is not None:
            try:
                stored = await approvals.place_of(self._db, approval_id)
            except Exception as exc:
                log.warning("could not read approval %s's Discord message: %s", approval_id, type(exc).__name__)
                stored = None
            platform, _, channel = (stored[0] if stored else "").partition(":")
            if stored and platform == PLATFORM and channel.isdigit() and stored[1].isdigit():
                self._places[approval_id] = Place(int(channel), int(stored[1]))
        return self._places.get(approval_id)

    def note_decider(self, approval_id: int, user_id: int) -> None:
        """In memory at once (no await), so a decision's outcome shown right after already knows who it was."""
        self._deciders[approval_id] = user_id

    async def save_decider(self, approval_id: int, user_id: int) -> None:
        self.note_decider(approval_id, user_id)
        if self._db is not None:
            try:
                await approvals.remember_decider(self._db, approval_id, str(user_id))
            except Exception as exc:
                log.warning("could not store who decided approval %s: %s", approval_id, type(exc).__name__)

    async def decider(self, approval_id: int) -> int | None:
        if approval_id not in self._deciders and self._db is not None:
            try:
                user = await approvals.decider_of(self._db, approval_id)
            except Exception as exc:
                log.warning("could not read who decided approval %s: %s", approval_id, type(exc).__name__)
                user = None
            if user is not None and user.isdigit():
                self._deciders[approval_id] = int(user)
        return self._deciders.get(approval_id)
