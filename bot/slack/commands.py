"""Slack's slash commands: every command bot/commands.py declares for "slack", carried out by the channel service.

Slack wants an answer within 3 seconds. A malformed command is answered in the ack itself
(ephemeral usage); a valid one is acked empty at once and carried out in the background, because
the service's announcement is a chat.postMessage that may wait on Slack's rate limits. A valid
command runs once per trigger_id: a replayed request is acked and ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.approval_desk import Actor
from bot.command_values import Command, CommandError
from bot.commands import COMMANDS, Spec, parse
from bot.slack.keys import channel_key
from bot.slack.slack_bot import SlackBot
from bot.slack.text import escape_for_slack
from storage import events
from storage.channels import Place

log = logging.getLogger(__name__)

SLASH_COMMANDS: dict[str, Spec] = {f"/{spec.name}": spec for spec in COMMANDS if "slack" in spec.places}


def register(bot: SlackBot) -> None:
    for name, spec in SLASH_COMMANDS.items():
        bot.bolt.command(name)(_listener(bot, spec))


@dataclass(frozen=True)
class SlashCommand:
    """What a slash command request carries that we use; every field Slack always sends."""

    name: str
    text: str
    team_id: str
    channel_id: str
    user_id: str
    trigger_id: str  # unique to each invocation: a replayed request carries the same one

    @property
    def event_id(self) -> str:
        return f"slack-trigger:{self.trigger_id}"


def slash_command(body: Mapping[str, Any]) -> SlashCommand | None:
    """The command in a request body; None when a field is missing or not text."""
    fields = [body.get(name) for name in ("command", "text", "team_id", "channel_id", "user_id", "trigger_id")]
    texts = [value for value in fields if isinstance(value, str)]
    if len(texts) != len(fields) or not all(texts[2:]):
        return None
    return SlashCommand(*texts)


def _listener(bot: SlackBot, spec: Spec) -> Callable[..., Any]:
    async def on_command(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        invoked = slash_command(command)
        if invoked is None:
            log.warning("slash command without its team, channel, user or trigger ignored")
            await ack()
            return
        try:
            parsed = parse(spec, invoked.text)
        except CommandError as exc:
            await ack(text=escape_for_slack(str(exc)), response_type="ephemeral")
            return
        await ack()
        if bot.seen.first_time(invoked.event_id):
            bot.work.start(carry_out(bot, invoked, parsed, respond), name=f"slack {invoked.name}")

    return on_command


async def carry_out(bot: SlackBot, invoked: SlashCommand, command: Command, respond: AsyncRespond) -> None:
    """Once per trigger_id, also across restarts and processes: a replayed request changes nothing."""
    if not await events.claim(bot.roundtable.db, invoked.event_id):
        log.info("replayed slash command %s ignored", invoked.event_id)
        return
    names = bot.names
    actor = Actor(
        invoked.user_id,
        await names.name_of(invoked.user_id),
        invoked.team_id,
        await names.manages(invoked.user_id, invoked.team_id),
    )
    key = channel_key(invoked.team_id, invoked.channel_id)
    place = Place(f"slack:{invoked.team_id}")
    reply = await bot.roundtable.service.run_command(key, command, actor=actor, place=place)
    if not reply.announced:
        await respond(text=escape_for_slack(reply.reply), response_type="ephemeral")
