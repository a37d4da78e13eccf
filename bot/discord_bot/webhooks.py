"""The bot's own webhook in each Discord channel, and the usernames Discord lets a webhook post under."""

from __future__ import annotations

import asyncio
import re

import discord

# -- webhook usernames -----------------------------------------------------------------------------
# Webhook usernames Discord accepts, made the way PluralKit makes them.
#
# Discord refuses a webhook username that contains "clyde" or "discord" (any case), that is exactly
# "everyone" or "here", that contains ``` , or that is longer than 80 characters. PluralKit keeps
# the name readable by slipping a hair space (U+200A) inside the refused word, pads a one-character
# name with an invisible U+17B5, and truncates to 80.

MAX_USERNAME = 80
_HAIR_SPACE = "\u200a"
_INVISIBLE_PAD = "\u17b5"
_REFUSED = (
    re.compile(r"(c)(lyde)", re.IGNORECASE),
    re.compile(r"(d)(iscord)", re.IGNORECASE),
    re.compile(r"^(e)(veryone)$", re.IGNORECASE),
    re.compile(r"^(h)(ere)$", re.IGNORECASE),
    re.compile(r"(`)(``)"),
)


def webhook_username(display_name: str) -> str:
    name = display_name.strip()
    for pattern in _REFUSED:
        name = pattern.sub(lambda m: m.group(1) + _HAIR_SPACE + m.group(2), name)
    if len(name) == 1:
        name += _INVISIBLE_PAD
    return name[:MAX_USERNAME]


# -- one webhook per channel -----------------------------------------------------------------------
# One webhook per channel, PluralKit style: reused if the bot already owns one, else created, then cached.

WEBHOOK_NAME = "Roundtable"


class ChannelWebhooks:
    def __init__(self, client: discord.Client) -> None:
        self._client = client
        self._cache: dict[int, discord.Webhook | None] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def get(self, channel_id: int) -> discord.Webhook | None:
        """The channel's webhook; None where Discord has no webhooks. Raises discord.Forbidden
        without the Manage Webhooks permission."""
        # The lock keeps two first posts (a channel and one of its threads, say) from creating two webhooks.
        async with self._locks.setdefault(channel_id, asyncio.Lock()):
            if channel_id not in self._cache:
                self._cache[channel_id] = await self._find_or_create(channel_id)
            return self._cache[channel_id]

    def forget(self, channel_id: int) -> None:
        """Drop a cached webhook that Discord no longer knows (someone deleted it)."""
        self._cache.pop(channel_id, None)

    async def _find_or_create(self, channel_id: int) -> discord.Webhook | None:
        channel = self._client.get_channel(channel_id) or await self._client.fetch_channel(channel_id)
        if not isinstance(
            channel, discord.TextChannel | discord.VoiceChannel | discord.StageChannel | discord.ForumChannel
        ):
            return None  # only these channels have webhooks
        me = self._client.user
        for webhook in await channel.webhooks():
            if me is not None and webhook.user is not None and webhook.user.id == me.id and webhook.token:
                return webhook
        return await channel.create_webhook(name=WEBHOOK_NAME, reason="Roundtable posts each persona through it")
