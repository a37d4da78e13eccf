"""The approval request messages: posted by the bot with buttons, then edited as the approval is decided.

Two edits can race for one request: the click shows "Approved by …; running it now" while the
resumed flow shows the final outcome. A lock per approval orders them, and once a final outcome is
shown nothing replaces it. Edits go through the bot's own REST API (not the interaction token),
since an expiry or a late execution can come long after the click's 15 minutes.
"""

from __future__ import annotations

import asyncio

import discord

from bot.discord_bot.approval_places import ApprovalPlaces, Place
from bot.discord_bot.approval_text import approval_text
from bot.discord_bot.inbound import channel_id_of
from personas import Persona
from storage.records import Approval, ApprovalStatus

NO_MENTIONS = discord.AllowedMentions.none()
_NOT_FINAL = (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class ApprovalBoard:
    def __init__(self, client: discord.Client, places: ApprovalPlaces) -> None:
        self._client = client
        self.places = places
        self._locks: dict[int, asyncio.Lock] = {}
        self._settled: set[int] = set()

    async def post_request(self, approval: Approval, persona: Persona, buttons: discord.ui.View) -> None:
        """Raises discord.py's and aiohttp's errors; the port decides what a failed post means."""
        channel = self._client.get_partial_messageable(channel_id_of(approval.channel_key))
        message = await channel.send(approval_text(approval, persona), view=buttons, allowed_mentions=NO_MENTIONS)
        await self.places.remember(approval.id, Place(message.channel.id, message.id))

    async def show(self, approval: Approval, persona: Persona) -> bool:
        """Edit the request to show the approval's state, buttons removed. False when no request
        message is known (the approval went to Slack, or its post failed). Raises on a failed edit."""
        place = await self.places.place(approval.id)
        if place is None:
            return False
        async with self._locks.setdefault(approval.id, asyncio.Lock()):
            if approval.id in self._settled:
                return True  # a final outcome is already showing
            decider = await self.places.decider(approval.id)
            message = self._client.get_partial_messageable(place.channel_id).get_partial_message(place.message_id)
            text = approval_text(approval, persona, decider_id=decider)
            await message.edit(content=text, view=None, allowed_mentions=NO_MENTIONS)
            if approval.status not in _NOT_FINAL:
                self._settled.add(approval.id)
                self._locks.pop(approval.id, None)
        return True
