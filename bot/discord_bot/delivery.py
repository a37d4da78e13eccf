"""Getting text into a Discord channel or thread: as a persona through the channel's webhook, or as the bot.

Without the Manage Webhooks permission a persona's text goes out as "**Name:** text" from the bot,
and the channel is told why, once. Nothing sent here may ping anyone: every send carries
AllowedMentions.none(). Errors are raised; the port decides what a failed delivery means.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import discord

from bot.avatars import TWEMOJI_BASE_URL, twemoji_url
from bot.discord_bot.chunks import MESSAGE_LIMIT, split_message
from bot.discord_bot.inbound import channel_id_of
from bot.discord_bot.names import webhook_username
from bot.discord_bot.webhooks import ChannelWebhooks
from personas import Persona

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
NO_WEBHOOKS_NOTICE = (
    "I can't manage webhooks in this channel, so personas speak through me with their names in bold. "
    "Give me the Manage Webhooks permission and each persona posts under its own name and avatar."
)


@dataclass(frozen=True)
class Destination:
    channel_id: int  # where the message appears: a channel, or a thread
    parent_id: int | None  # for a thread, the channel that owns the webhook

    @property
    def webhook_channel_id(self) -> int:
        return self.parent_id or self.channel_id


def avatar_url(persona: Persona, twemoji_base_url: str = TWEMOJI_BASE_URL) -> str | None:
    """An image URL as is; an emoji ("🎨", ":owl:") as its Twemoji image; None for anything else."""
    return persona.avatar if persona.avatar_is_url else twemoji_url(persona.avatar, twemoji_base_url)


class Delivery:
    def __init__(self, client: discord.Client, twemoji_base_url: str = TWEMOJI_BASE_URL) -> None:
        self._client = client
        self._twemoji_base_url = twemoji_base_url
        self._webhooks = ChannelWebhooks(client)
        self._parents: dict[int, int | None] = {}
        self._without_webhooks: set[int] = set()

    async def destination(self, channel_key: str) -> Destination:
        """A Discord thread has a channel key of its own; its parent is looked up once and remembered."""
        channel_id = channel_id_of(channel_key)
        if channel_id not in self._parents:
            channel = self._client.get_channel(channel_id) or await self._client.fetch_channel(channel_id)
            self._parents[channel_id] = channel.parent_id if isinstance(channel, discord.Thread) else None
        return Destination(channel_id, self._parents[channel_id])

    async def as_persona(self, where: Destination, persona: Persona, text: str) -> None:
        chunks = split_message(text)
        sent = 0
        for attempt in (1, 2):
            webhook = await self._webhook(where)
            if webhook is None:
                await self._as_bot_named(where, persona, "\n".join(chunks[sent:]))
                return
            try:
                for chunk in chunks[sent:]:
                    await webhook.send(
                        chunk,
                        username=webhook_username(persona.display_name),
                        avatar_url=avatar_url(persona, self._twemoji_base_url),
                        allowed_mentions=NO_MENTIONS,
                        wait=True,
                        thread=discord.Object(where.channel_id) if where.parent_id else discord.utils.MISSING,
                    )
                    sent += 1
                return
            except discord.NotFound:
                if attempt == 2:
                    raise
                log.warning("the webhook of channel %s is gone; making a new one", where.webhook_channel_id)
                self._webhooks.forget(where.webhook_channel_id)

    async def as_bot(self, where: Destination, text: str, *, silent: bool = False) -> None:
        """`silent`: suppressed from notifications, as Discord's @silent messages are."""
        channel = self._client.get_partial_messageable(where.channel_id)
        for chunk in split_message(text):
            await channel.send(chunk, allowed_mentions=NO_MENTIONS, silent=silent)

    async def _as_bot_named(self, where: Destination, persona: Persona, text: str) -> None:
        prefix = f"**{discord.utils.escape_markdown(persona.display_name)}:** "
        channel = self._client.get_partial_messageable(where.channel_id)
        for chunk in split_message(text, MESSAGE_LIMIT - len(prefix)):
            await channel.send(prefix + chunk, allowed_mentions=NO_MENTIONS)

    async def _webhook(self, where: Destination) -> discord.Webhook | None:
        if where.webhook_channel_id in self._without_webhooks:
            return None
        try:
            return await self._webhooks.get(where.webhook_channel_id)
        except discord.Forbidden:
            log.warning("no Manage Webhooks permission in channel %s; posting as the bot", where.webhook_channel_id)
            self._without_webhooks.add(where.webhook_channel_id)
            await self.as_bot(where, NO_WEBHOOKS_NOTICE)
            return None
