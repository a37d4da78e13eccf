"""Events API listeners: channel messages and @mentions become Inbound for the channel service."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.inbound import Inbound
from bot.slack.inbound import inbound_from_event
from bot.slack.keys import channel_id_of
from bot.slack.private import tell_privately
from bot.slack.slack_bot import SlackBot


def register(bot: SlackBot) -> None:
    async def on_message(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """Slack is acknowledged only once the message is stored: a stop before that, and Slack
        delivers it again. Messages are stored in the order they arrived, per channel."""
        inbound = inbound_from_event(body, context.bot_user_id)
        if inbound is None or inbound.event_id is None or not bot.seen.first_time(inbound.event_id):
            await ack()
            return
        try:
            async with bot.roundtable.service.in_arrival_order(inbound.channel_key):
                named = replace(inbound, author_name=await bot.names.name_of(inbound.author_id))
                reply = await bot.roundtable.service.handle(named)
        except Exception:
            bot.seen.forget(inbound.event_id)  # not stored: Slack's retry must get through
            raise
        await ack()
        if reply is not None and not reply.announced:
            bot.work.start(tell_author(bot, named, reply.reply), name=f"slack reply {body.get('event_id')}")

    bot.bolt.event("message")(on_message)
    bot.bolt.event("app_mention")(on_message)


async def tell_author(bot: SlackBot, inbound: Inbound, text: str) -> None:
    """A command typed as a message (e.g. "@Roundtable /personas"): the answer goes only to its author."""
    channel = channel_id_of(inbound.channel_key)
    if channel is not None:
        await tell_privately(bot.bolt.client, channel, inbound.author_id, text, inbound.thread)
