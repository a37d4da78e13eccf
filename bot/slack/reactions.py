"""Slack reactions as votes (bot/votes.py): 👍 or 👎 on a persona's post, given or taken back
(reaction_added and reaction_removed, scope reactions:read; manifest.yml), and a 👎's reason, its
author's next reply in the post's thread.

The events' fields, from https://docs.slack.dev/reference/events/reaction_added (and reaction_removed):
`user` reacted, `reaction` is the emoji's name ("+1", "-1", with a skin tone "+1::skin-tone-3"),
`item` is what was reacted to ({"type": "message", "channel", "ts"} for a message; files have
none), and `item_user` is its author (absent for a message no user wrote).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.inbound import Inbound
from bot.slack.keys import thread_ts_of
from bot.slack.slack_bot import SlackBot

log = logging.getLogger(__name__)


def message_reacted_to(event: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(platform message, voter, emoji) of a reaction event on a message; None for anything else,
    or an event missing what a vote needs."""
    item = event.get("item")
    user, emoji = event.get("user"), event.get("reaction")
    if not isinstance(item, Mapping) or item.get("type") != "message":
        return None
    channel, ts = item.get("channel"), item.get("ts")
    if not all(isinstance(value, str) and value for value in (channel, ts, user, emoji)):
        return None
    return f"slack:{channel}:{ts}", str(user), str(emoji)


def register(bot: SlackBot) -> None:
    async def on_reaction(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        event = body.get("event")
        found = message_reacted_to(event) if isinstance(event, Mapping) else None
        if found is None or found[1] == context.bot_user_id:
            await ack()
            return
        message, voter, emoji = found
        added = event.get("type") == "reaction_added" if isinstance(event, Mapping) else False
        try:
            await bot.roundtable.votes.react(message, voter, emoji, added=added)
        except Exception:  # the database is away: unacked, Slack delivers the event again
            log.exception("a Slack reaction on %s could not be stored", message)
            return
        await ack()  # only once stored: a vote acked and then lost to a crash would be a person's act lost

    bot.bolt.event("reaction_added")(on_reaction)
    bot.bolt.event("reaction_removed")(on_reaction)


async def keep_reason(bot: SlackBot, inbound: Inbound) -> None:
    """A person's message in a thread: the reason of their 👎 on the post the thread is on, if it waits for one."""
    if thread_ts_of(inbound.channel_key) is None or inbound.text.startswith("/"):
        return
    await bot.roundtable.votes.replied(inbound.author_id, inbound.channel_key, inbound.text)
