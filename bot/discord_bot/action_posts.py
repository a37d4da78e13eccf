"""An approved action's post on Discord (publish_post, send_message), known by its place so a restart
can find it.

Execute Webhook takes no nonce (https://discord.com/developers/docs/resources/webhook#execute-webhook),
so a post carries no marker of its approval. What only this post has is its place in our own sequence
of posts through the channel's webhook (look_back.py): in the post's turn there (posts through the
webhook into a channel or thread are made one at a time, Delivery.as_persona) the newest message id
is noted as its mark and committed with the run's claim before anything is posted. A run a stop cut
short reads the messages after that mark: the webhook's under the persona's name, not taken for
another approval, are its pieces in order (text only confirms); the missing ones are posted now.

The look-up cannot finish (LookupUnfinished: the outcome stays unknown, with why) when no mark was
noted, when the channel has no webhook of the bot's (its posts went out as the bot), or when more
than LOOKBACK_LIMIT messages came after the mark. send_message on Discord names a channel (there
are no direct messages to people), so it is looked up the same way.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import aiohttp
import discord

from bot.discord_bot.delivery import CLOCK_MARGIN, Delivery, Destination, split_message
from bot.discord_bot.look_back import pieces_created, read_after
from bot.discord_bot.webhooks import webhook_username
from bot.port import PostFailed
from graph.action_marks import ActionRun, LookupUnfinished
from personas import Persona

log = logging.getLogger(__name__)

CONNECT_SECONDS = 300.0  # how long a start-up look-up waits for the gateway before the outcome stays unknown
_READ_ERRORS = (discord.HTTPException, aiohttp.ClientError, TimeoutError)


class ActionPosts:
    def __init__(self, client: discord.Client, delivery: Delivery) -> None:
        self._client = client
        self._delivery = delivery
        self._taken: set[int] = set()  # message ids found for a recovered approval: never another's

    async def post(self, where: Destination, persona: Persona, text: str, run: ActionRun | None) -> None:
        """Post `text` as `persona`; for a run that looks first, only the pieces its cut run did not post."""
        if run is None or not run.looks_first:
            first = None if run is None else lambda: self._note_mark(where, run)
            await self._delivery.as_persona(where, persona, text, first=first)
            return
        chunks = split_message(text)
        found = await self._pieces_found(where, persona, chunks, run)
        run.pieces, run.found = len(chunks), len(found)
        for chunk in chunks[len(found) :]:  # found are the first pieces, in order
            await self._delivery.as_persona(where, persona, chunk)

    async def connected(self) -> None:
        """Start-up looks up a cut run while the gateway connects: the channel's server (which the
        action's target is looked up in) is known once the client is ready."""
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                while not _ready(self._client):
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise LookupUnfinished(f"Discord did not connect within {CONNECT_SECONDS:g} seconds") from None

    async def _note_mark(self, where: Destination, run: ActionRun) -> None:
        """The newest message there, committed with the claim before the post is made."""
        if run.keep_mark is not None:
            await run.keep_mark(await self._newest_message_id(where.channel_id))

    async def _newest_message_id(self, channel_id: int) -> int:
        try:
            async for message in self._client.get_partial_messageable(channel_id).history(limit=1):
                return message.id
            return 0  # an empty channel: every message is after the mark
        except _READ_ERRORS as exc:
            # The time of the attempt, less the clock margin: a snowflake is its creation time.
            log.info("channel %s's newest message could not be read (%s); marking the time", channel_id, exc)
            return discord.utils.time_snowflake(datetime.now(UTC) - timedelta(seconds=CLOCK_MARGIN))

    async def _pieces_found(
        self, where: Destination, persona: Persona, chunks: list[str], run: ActionRun
    ) -> dict[int, int]:
        if run.mark is None:
            raise LookupUnfinished("no mark of where the channel stood was noted before the post")
        try:
            webhook = await self._delivery.webhook_of(where)
            if webhook is None:
                raise LookupUnfinished("the channel has no webhook of the bot's to know its posts by")
            messages = await read_after(self._client, where.channel_id, run.mark)
        except PostFailed as exc:
            raise LookupUnfinished(str(exc).removeprefix("outcome unknown: ")) from None
        except _READ_ERRORS as exc:
            raise LookupUnfinished(f"Discord's history could not be read ({type(exc).__name__})") from None
        username = webhook_username(persona.display_name)
        found = pieces_created(messages, chunks, webhook_id=webhook.id, username=username, other_posts=self._taken)
        self._taken.update(found.values())
        return found


def _ready(client: discord.Client) -> bool:
    try:
        return client.is_ready()
    except AttributeError:  # not logged in yet: its ready event does not exist before
        return False
