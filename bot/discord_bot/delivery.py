"""Getting text into a Discord channel or thread: as a persona through the channel's webhook, or as the bot.

Without the Manage Webhooks permission a persona's text goes out as "**Name:** text" from the bot,
and the channel is told why, once. Nothing sent here may ping anyone: every send carries
AllowedMentions.none(). Errors are raised; the port decides what a failed delivery means.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import discord

from bot.avatars import TWEMOJI_BASE_URL, twemoji_url
from bot.discord_bot.inbound import channel_id_of, key_for_channel
from bot.discord_bot.look_back import LOOKBACK_LIMIT, WebhookSequence, pieces_created, read_after, through
from bot.discord_bot.webhooks import ChannelWebhooks, webhook_username
from bot.port import PostFailed, note_piece, sending
from personas import Persona
from storage.outbox import MARK_NEVER_NOTED

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
NO_WEBHOOKS_NOTICE = (
    "I can't manage webhooks in this channel, so personas speak through me with their names in bold. "
    "Give me the Manage Webhooks permission and each persona posts under its own name and avatar."
)
TOO_MANY_WEBHOOKS_NOTICE = (
    "For the approvers: this channel has 15 webhooks, the most Discord allows, and none is mine, so personas "
    "speak through me with their names in bold. Delete one of the channel's webhooks (Edit Channel, "
    "Integrations) and each persona posts under its own name and avatar."
)
MAX_WEBHOOKS_REACHED = 30007  # Discord's JSON error code: the channel holds 15 webhooks already


@dataclass(frozen=True)
class Destination:
    channel_id: int  # where the message appears: a channel, or a thread
    parent_id: int | None  # for a thread, the channel that owns the webhook

    @property
    def webhook_channel_id(self) -> int:
        return self.parent_id or self.channel_id


MAX_AVATAR_URL = 2048  # discord-api-spec openapi.json, IncomingWebhookRequestPartial.avatar_url maxLength


def avatar_url(persona: Persona, twemoji_base_url: str = TWEMOJI_BASE_URL) -> str | None:
    """An image URL as is; an emoji ("🎨", ":owl:") as its Twemoji image; None for anything else, and for
    a URL longer than Discord takes (it would refuse the whole post: the webhook's own avatar shows)."""
    url = persona.avatar if persona.avatar_is_url else twemoji_url(persona.avatar, twemoji_base_url)
    if url is not None and len(url) > MAX_AVATAR_URL:
        log.warning(
            "persona %s's avatar URL is longer than Discord's %d characters; not shown", persona.id, MAX_AVATAR_URL
        )
        return None
    return url


class Delivery:
    def __init__(self, client: discord.Client, twemoji_base_url: str = TWEMOJI_BASE_URL) -> None:
        self._client = client
        self._twemoji_base_url = twemoji_base_url
        self._webhooks = ChannelWebhooks(client)
        self._posting: dict[int, asyncio.Lock] = {}  # by channel or thread: one post at a time there
        self._sequences: dict[int, WebhookSequence] = {}  # by channel or thread
        self._parents: dict[int, int | None] = {}
        self._without_webhooks: set[int] = set()

    async def destination(self, channel_key: str) -> Destination:
        """A Discord thread has a channel key of its own; its parent is looked up once and remembered."""
        channel_id = channel_id_of(channel_key)
        if channel_id not in self._parents:
            channel = self._client.get_channel(channel_id) or await self._client.fetch_channel(channel_id)
            self._parents[channel_id] = channel.parent_id if isinstance(channel, discord.Thread) else None
        return Destination(channel_id, self._parents[channel_id])

    async def as_persona(
        self, where: Destination, persona: Persona, text: str, *, first: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """One post at a time per channel or thread: a post's place in that sequence is what the
        look-back after an attempt of unknown outcome knows it by (webhook posts take no nonce).
        `first` runs in the post's turn before it is made (an action notes its mark: action_posts.py)."""
        async with self._posting.setdefault(where.channel_id, asyncio.Lock()):
            if first is not None:
                await first()
            await self._as_persona(where, persona, split_message(text))

    async def webhook_of(self, where: Destination) -> discord.Webhook | None:
        """The webhook persona posts go through there (None: posted as the bot), for an action's look-up."""
        return await self._webhook(where)

    async def _as_persona(self, where: Destination, persona: Persona, chunks: list[str]) -> None:
        sent, marked = 0, False
        username = webhook_username(persona.display_name)
        for attempt in (1, 2):
            webhook = await self._webhook(where)
            if webhook is None:
                await self._as_bot_named(where, persona, "\n".join(chunks[sent:]))
                return
            if not marked:
                await self._keep_mark(where)
                marked = True
            posted_before = await self._pieces_posted_before(where, webhook, username, chunks)
            try:
                async with aiohttp.ClientSession(raise_for_status=_server_error_ends_the_attempt) as session:
                    executing = discord.Webhook.partial(webhook.id, webhook.token or "", session=session)
                    for piece, chunk in enumerate(chunks[sent:], start=sent):
                        if piece in posted_before:
                            sent += 1
                            continue
                        message = await executing.send(
                            chunk,
                            username=username,
                            avatar_url=avatar_url(persona, self._twemoji_base_url),
                            allowed_mentions=NO_MENTIONS,
                            wait=True,
                            thread=discord.Object(where.channel_id) if where.parent_id else discord.utils.MISSING,
                        )
                        self._sequence(where).confirm(message.id, _post_now())
                        sent += 1
                        # A reply in its thread arrives in the thread it is in, or in one opened on it (the same id).
                        note_piece(
                            f"discord:{message.id}",
                            key_for_channel(where.channel_id if where.parent_id else message.id),
                        )
                        if (outbox := sending()) is not None:
                            outbox.pieces_posted += 1
                return
            except discord.NotFound:
                if attempt == 2:
                    raise
                log.warning("the webhook of channel %s is gone; making a new one", where.webhook_channel_id)
                self._webhooks.forget(where.webhook_channel_id)

    async def remove_as_persona(self, where: Destination, persona: Persona, text: str) -> None:
        """Delete the persona's newest post reading `text` (each piece it was split into), found among the
        channel's newest messages as one of the channel webhook's under the persona's name, through
        that webhook (Delete Webhook Message: https://discord.com/developers/docs/resources/webhook#delete-webhook-message).
        Raises LookupError when it is not there."""
        webhook = await self._webhook(where)
        if webhook is None:
            raise LookupError("this channel has no webhook of the bot's, so no post of a persona's")
        chunks, name = split_message(text), webhook_username(persona.display_name)
        found: dict[str, int] = {}
        channel = self._client.get_partial_messageable(where.channel_id)
        async for message in channel.history(limit=REMOVAL_LOOKBACK):  # newest first
            ours = message.webhook_id == webhook.id and message.author.name.casefold() == name.casefold()
            if ours and message.content in chunks and message.content not in found:
                found[message.content] = message.id
        if len(found) < len(set(chunks)):
            raise LookupError(f"no post of {persona.display_name}'s with that text is among the newest here")
        async with aiohttp.ClientSession() as session:
            executing = discord.Webhook.partial(webhook.id, webhook.token or "", session=session)
            thread = discord.Object(where.channel_id) if where.parent_id else discord.utils.MISSING
            for message_id in found.values():
                await executing.delete_message(message_id, thread=thread)

    def _sequence(self, where: Destination) -> WebhookSequence:
        return self._sequences.setdefault(where.channel_id, WebhookSequence())

    async def _keep_mark(self, where: Destination) -> None:
        """Before the platform call of an outbox post's attempt that follows no attempt of unknown
        outcome: the newest message in the channel or thread (the last one this process confirmed
        there, else the channel's newest, read), stored with the outbox entry, so that whichever
        process makes the next attempt, this one or another after a crash, reads only what came
        after it. A read that fails leaves the attempt unmade: it is tried again later."""
        outbox = sending()
        if outbox is None or outbox.unknown_since is not None or outbox.keep_mark is None:
            return
        mark = self._sequence(where).last_confirmed
        if mark is None:
            mark = await self._newest_message_id(where.channel_id)
        await outbox.keep_mark(mark)

    async def _newest_message_id(self, channel_id: int) -> int:
        try:
            async for message in self._client.get_partial_messageable(channel_id).history(limit=1):
                return message.id
            return 0  # an empty channel: every message is after the mark
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            why = f"HTTP {exc.status}" if isinstance(exc, discord.HTTPException) else type(exc).__name__
            raise PostFailed(f"the channel's newest message could not be read ({why}); not posted yet") from exc

    async def _pieces_posted_before(
        self, where: Destination, webhook: discord.Webhook, username: str, chunks: list[str]
    ) -> set[int]:
        """The pieces earlier attempts of unknown outcome of this outbox post created: by its place in
        our sequence of posts through the webhook there, after the mark stored with the entry
        (pieces_created), whichever process made those attempts. No mark stored: the attempt was
        cut before its platform call, so it created nothing. An attempt made before marks were kept
        (MARK_NEVER_NOTED): posted again only when no message of the webhook under the persona's name
        with the piece's text is there since the entry was queued (less the clock margin)."""
        outbox = sending()
        if outbox is None or outbox.unknown_since is None or outbox.look_back_mark is None:
            return set()
        others = self._sequence(where).others(_post_now())
        mark = outbox.look_back_mark
        if mark == MARK_NEVER_NOTED:
            log.warning(
                "outbox entry %s was in flight before look-back marks were kept: a piece with its text posted "
                "through the webhook since it was queued counts as posted",
                outbox.entry_id,
            )

            def ours(message: discord.Message) -> bool:
                return through(message, webhook.id, username) and message.id not in others

            return await self.posted_before(where.channel_id, chunks, ours, since=outbox.created_at)
        messages = await read_after(self._client, where.channel_id, mark)
        created = pieces_created(messages, chunks, webhook_id=webhook.id, username=username, other_posts=others)
        for message_id in created.values():
            self._sequence(where).confirm(message_id, outbox.entry_id)
        return set(created)

    async def posted_before(
        self, channel_id: int, chunks: list[str], ours: Callable[[discord.Message], bool], *, since: float | None = None
    ) -> set[int]:
        """The pieces (of `chunks`) an earlier attempt whose outcome is unknown posted in the channel: its
        messages since that attempt began that are `ours` with the same text, read page by page to the
        window's end. Nothing to look for unless the outbox says an attempt's outcome is unknown; a window
        too busy to read leaves it unknown (PostFailed, permanent). `since`: from then on instead."""
        outbox = sending()
        if outbox is None or outbox.unknown_since is None:
            return set()
        began = datetime.fromtimestamp((since or outbox.unknown_since) - CLOCK_MARGIN, UTC)
        found: set[int] = set()
        read = 0
        channel = self._client.get_partial_messageable(channel_id)
        # Oldest first from the attempt on, 100 a page (Get Channel Messages with `after`); discord.py
        # waits out the rate limit. Every piece found ends the look early.
        async for message in channel.history(limit=LOOKBACK_LIMIT + 1, after=began):
            read += 1
            if ours(message) and message.content in chunks:
                found.add(chunks.index(message.content))
            if len(found) == len(set(chunks)):
                return found
        if read > LOOKBACK_LIMIT:
            raise PostFailed(
                f"outcome unknown: more than {LOOKBACK_LIMIT} messages since the attempt, not posted again",
                permanent=True,
            )
        return found

    def by_the_bot(self, message: discord.Message) -> bool:
        me = self._client.user
        return message.webhook_id is None and me is not None and message.author.id == me.id

    async def as_bot(self, where: Destination, text: str, *, silent: bool = False) -> None:
        """`silent`: suppressed from notifications, as Discord's @silent messages are."""
        await self._send_as_bot(where.channel_id, split_message(text), silent=silent)

    async def _send_as_bot(self, channel_id: int, chunks: list[str], *, silent: bool = False) -> None:
        """Each piece with its nonce, which Discord checks for a few minutes only: an attempt of unknown
        outcome retried later looks for its pieces first."""
        channel = self._client.get_partial_messageable(channel_id)
        posted_before = await self.posted_before(channel_id, chunks, self.by_the_bot)
        for piece, chunk in enumerate(chunks):
            if piece in posted_before:
                continue
            await channel.send(chunk, allowed_mentions=NO_MENTIONS, silent=silent, nonce=nonce(piece))
            if (outbox := sending()) is not None:
                outbox.pieces_posted += 1

    async def _as_bot_named(self, where: Destination, persona: Persona, text: str) -> None:
        prefix = f"**{discord.utils.escape_markdown(persona.display_name)}:** "
        await self._send_as_bot(
            where.channel_id, [prefix + c for c in split_message(text, MESSAGE_LIMIT - len(prefix))]
        )

    async def _webhook(self, where: Destination) -> discord.Webhook | None:
        if where.webhook_channel_id in self._without_webhooks:
            return None
        try:
            return await self._webhooks.get(where.webhook_channel_id)
        except discord.Forbidden:
            log.warning("no Manage Webhooks permission in channel %s; posting as the bot", where.webhook_channel_id)
            self._without_webhooks.add(where.webhook_channel_id)
            await self._say_once(where, NO_WEBHOOKS_NOTICE)
            return None
        except discord.HTTPException as exc:
            if exc.code != MAX_WEBHOOKS_REACHED:
                raise
            log.warning("channel %s has 15 webhooks already; posting as the bot", where.webhook_channel_id)
            self._without_webhooks.add(where.webhook_channel_id)
            await self._say_once(where, TOO_MANY_WEBHOOKS_NOTICE)
            return None

    async def _say_once(self, where: Destination, notice: str) -> None:
        """A notice of this process's own, without the outbox entry's nonce: the persona's line sent next
        carries that nonce, and Discord would answer it with this notice instead of posting it."""
        channel = self._client.get_partial_messageable(where.channel_id)
        await channel.send(notice, allowed_mentions=NO_MENTIONS)


async def _server_error_ends_the_attempt(response: aiohttp.ClientResponse) -> None:
    """A webhook execute answered with a 5xx is not sent again by discord.py (its webhook adapter re-sends
    up to five times, and a webhook takes no nonce: a 5xx that came after the message was created would
    post it again). The outbox tries again later, after looking for what this attempt posted."""
    if response.status >= 500:
        raise discord.DiscordServerError(response, await response.text())


# -- the outbox ----------------------------------------------------------------------------------------
# A message the bot itself sends for the outbox carries a nonce with enforce_nonce (discord.py sets it
# with the nonce): Discord answers a repeat within a few minutes with the message it already created,
# so an attempt cut by a crash is not posted twice. Webhook messages (persona lines) take no nonce:
# for them the channel's messages after the post's stored look-back mark are read first
# (Delivery._pieces_posted_before, look_back.py).


CLOCK_MARGIN = 60.0  # seconds looked back before a time (text look-backs only), for a clock that differs from Discord's
REMOVAL_LOOKBACK = 100  # the newest messages delete_post looks through: one page


def nonce(piece: int) -> Any:
    """The nonce of piece `piece` of the outbox entry being sent; None (send's default) for a direct call.
    Typed Any: discord.py's overloads take no None, though its implementation does."""
    outbox = sending()
    return None if outbox is None else f"rt{outbox.entry_id}.{piece}"  # at most 25 characters


def failure_of(exc: BaseException) -> PostFailed:
    """Discord refused (404 Unknown Channel, 403 Missing Access, 400): permanent. Rate limits (after
    discord.py's own waits), 5xx and the network: worth another try, after Retry-After when given, and
    after looking for what the failed attempt may have posted when no answer (or a 5xx) came."""
    if isinstance(exc, discord.HTTPException):
        reason = f"HTTP {exc.status} (Discord code {exc.code})"
        if exc.status >= 500:  # said nothing of whether the message was created: the next attempt looks first
            return PostFailed(reason, maybe_posted=True)
        if exc.status == 429:
            try:
                retry_after: float | None = float(exc.response.headers.get("Retry-After", ""))
            except (TypeError, ValueError, AttributeError):
                retry_after = None
            return PostFailed(reason, retry_after=retry_after)
        return PostFailed(reason, permanent=True)
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        return PostFailed(type(exc).__name__, maybe_posted=True)  # no answer: it may have been taken
    return PostFailed(type(exc).__name__, permanent=True)


def _post_now() -> int:
    """The post being made: its outbox entry, or -1 for a direct call (an action), which the outbox
    never tries again."""
    outbox = sending()
    return -1 if outbox is None else outbox.entry_id


# -- message length --------------------------------------------------------------------------------
# Discord's 2,000-character message limit: long text becomes several messages, cut at line breaks.

MESSAGE_LIMIT = 2000


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Pieces of at most `limit` characters, cut at line breaks, else at a space, else anywhere."""
    chunks: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        for piece in _cut_long_line(line, limit):
            if len(current) + len(piece) > limit:
                chunks.append(current)
                current = ""
            current += piece
    chunks.append(current)
    return [chunk.lstrip("\n").rstrip() for chunk in chunks if chunk.strip()]


def _cut_long_line(line: str, limit: int) -> list[str]:
    pieces: list[str] = []
    while len(line) > limit:
        cut = line.rfind(" ", 0, limit) + 1 or limit
        pieces.append(line[:cut])
        line = line[cut:]
    pieces.append(line)
    return pieces
