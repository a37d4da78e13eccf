"""Events API listeners: channel messages and @mentions become Inbound for the channel service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import aiohttp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.inbound import Inbound
from bot.slack.inbound import inbound_from_event, strip_mention
from bot.slack.keys import channel_id_of, thread_ts_of
from bot.slack.reactions import keep_reason
from bot.slack.slack_bot import SlackBot, tell_privately
from bot.slack.text import unescape_from_slack
from graph.prompt import APP_AUTHOR_PREFIX, OUR_APP_AUTHOR
from storage import channels
from storage.channels import FirstLine
from storage.records import LineKind

log = logging.getLogger(__name__)

# Slack retries an event its app has not answered within 3 seconds (https://docs.slack.dev/apis/events-api/,
# "Responding to events" and the http_timeout retry). A message is answered once stored, so the Web API
# lookups before that (the author's name, whether they manage the channel, a thread's parent), which can sit
# in rate-limit retries, get this long from the event's arrival; one not answered by then is gone without,
# as when it fails.
LOOKUP_SECONDS = 2.0

T = TypeVar("T")


async def by(deadline: float, lookup: Awaitable[T], fallback: T, what: str) -> T:
    """`lookup`'s answer, or `fallback` when it has not come by `deadline` (the event loop's time)."""
    try:
        async with asyncio.timeout_at(deadline):
            return await lookup
    except TimeoutError:
        log.warning("%s not answered in time to acknowledge Slack within 3 s; stored without it", what)
        return fallback


def register(bot: SlackBot) -> None:
    async def on_message(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """Slack is acknowledged only once the message is stored: a stop before that, and Slack
        delivers it again. Messages are stored in the order they arrived, per channel."""
        deadline = asyncio.get_running_loop().time() + LOOKUP_SECONDS
        inbound = inbound_from_event(body, context.bot_user_id)
        if inbound is None or inbound.event_id is None or not bot.seen.first_time(inbound.event_id):
            await ack()
            return
        try:
            async with bot.roundtable.service.in_arrival_order(inbound.channel_key):
                await start_thread(bot, inbound.channel_key, context.bot_id, context.bot_user_id, deadline)
                author = inbound.author_id
                named = replace(
                    inbound,
                    author_name=await by(deadline, bot.names.name_of(author), author, f"users.info for {author}"),
                    # Only a command asks who manages the channel (users.info, looked up once per user).
                    author_manages=inbound.text.startswith("/")
                    and await by(
                        deadline,
                        bot.names.manages(author, inbound.tenant.removeprefix("slack:")),
                        False,
                        f"users.info for {author}",
                    ),
                )
                reply = await bot.roundtable.service.handle(named)
        except Exception:
            bot.seen.forget(inbound.event_id)  # not stored: Slack's retry must get through
            raise
        await ack()
        if thread_ts_of(named.channel_key) is not None:  # perhaps a 👎's reason (bot/slack/reactions.py)
            bot.work.start(keep_reason(bot, named), name=f"slack reason {body.get('event_id')}")
        if reply is not None and not reply.announced:
            bot.work.start(tell_author(bot, named, reply.reply), name=f"slack reply {body.get('event_id')}")

    bot.bolt.event("message")(on_message)
    bot.bolt.event("app_mention")(on_message)


async def tell_author(bot: SlackBot, inbound: Inbound, text: str) -> None:
    """A command typed as a message (e.g. "@Roundtable /personas"): the answer goes only to its author."""
    channel = channel_id_of(inbound.channel_key)
    if channel is not None:
        await tell_privately(bot.bolt.client, channel, inbound.author_id, text, inbound.thread)


async def start_thread(bot: SlackBot, key: str, bot_id: str | None, bot_user_id: str | None, deadline: float) -> None:
    """A thread is a conversation of its own that starts with its parent message: the first time a
    thread is seen, the parent (fetched from Slack) becomes its first line."""
    channel, thread = channel_id_of(key), thread_ts_of(key)
    db = bot.roundtable.db
    if channel is None or thread is None or await channels.get_channel(db, key) is not None:
        return
    try:
        async with asyncio.timeout_at(deadline):
            response = await bot.bolt.client.conversations_replies(channel=channel, ts=thread, limit=1)
        parent = (response.get("messages") or [None])[0]
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
        log.warning("conversations.replies for the parent of %s failed: %s", key, error)
        return
    first = await parent_line(bot, parent, bot_id, bot_user_id, deadline) if isinstance(parent, Mapping) else None
    defaults = bot.roundtable.service.defaults
    await channels.ensure_channel(
        db, key, participants=defaults.participants, moderated=defaults.moderated, first_line=first
    )


async def parent_line(
    bot: SlackBot, parent: Mapping[str, Any], bot_id: str | None, bot_user_id: str | None, deadline: float
) -> FirstLine | None:
    """Our persona's line when one of our personas posted it, else its author's: a person, or an app
    (ours under no persona's name, or another one), whose post is read as its attributed notice and
    never as system text (graph/prompt.py app_post_text)."""
    text = strip_mention(unescape_from_slack(str(parent.get("text") or "")), bot_user_id)
    if not text:
        return None
    if bot_id and parent.get("bot_id") == bot_id:
        username = parent.get("username")
        persona = next((p for p in bot.roundtable.personas.values() if p.display_name == username), None)
        if persona is None:
            return LineKind.HUMAN, OUR_APP_AUTHOR, str(username or "this app"), text
        return LineKind.PERSONA, persona.id, persona.display_name, text
    if parent.get("bot_id"):  # another app's message (it may name its bot user as `user` too)
        profile = parent.get("bot_profile")
        shown = profile.get("name") if isinstance(profile, Mapping) else None
        name = str(parent.get("username") or shown or parent["bot_id"])
        return LineKind.HUMAN, f"{APP_AUTHOR_PREFIX}{parent['bot_id']}", name, text
    user = str(parent.get("user") or "")
    if user:
        return LineKind.HUMAN, user, await by(deadline, bot.names.name_of(user), user, f"users.info for {user}"), text
    return LineKind.HUMAN, f"{APP_AUTHOR_PREFIX}unknown", "unknown", text
