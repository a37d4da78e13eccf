"""Discord reactions as votes (bot/votes.py): 👍 or 👎 on a persona's post, given or taken back, read
from the gateway's MESSAGE_REACTION_ADD and MESSAGE_REACTION_REMOVE (the GUILD_MESSAGE_REACTIONS
intent; discord.py's raw reaction events, which come whether or not the message is cached), and a
👎's reason, its author's next message in the post's thread.

The events' fields, from https://discord.com/developers/docs/topics/gateway-events#message-reaction-add:
`user_id` reacted to `message_id` in `channel_id` (and `guild_id`, absent in a DM) with `emoji`, a
partial emoji: a unicode one has only its character as `name`; a custom one has an `id` too, and a
`name` that may be null once it is deleted.
"""

from __future__ import annotations

import logging

import discord

from bot.inbound import Inbound
from bot.votes import Votes

log = logging.getLogger(__name__)


async def take_reaction(votes: Votes, reaction: discord.RawReactionActionEvent, bot_user_id: int | None) -> None:
    """A reaction in a guild's channel; a custom emoji, the bot's own or one in a DM never votes."""
    emoji = reaction.emoji
    if reaction.guild_id is None or reaction.user_id == bot_user_id or emoji.id is not None or not emoji.name:
        return
    message = f"discord:{reaction.message_id}"
    try:
        await votes.react(message, str(reaction.user_id), emoji.name, added=reaction.event_type == "REACTION_ADD")
    except Exception:  # the database is away: this reaction is not counted, the bot goes on
        log.exception("a Discord reaction on %s could not be stored", message)


async def keep_reason(votes: Votes, inbound: Inbound) -> None:
    """A person's message in a thread: the reason of their 👎 on the post the thread is on (a thread
    opened on a message has that message's id), or in, if it waits for one."""
    if inbound.parent_key is None:
        return
    try:
        await votes.replied(inbound.author_id, inbound.channel_key, inbound.text)
    except Exception:
        log.exception("a reply in %s could not be kept as a reason", inbound.channel_key)
