"""Slash commands: /moderate, /stop, /next, /persona, /approvals, /trust, /task, /mailbox and /roundtable help, carried out by
the channel service.

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
from bot.commands import (
    USAGE,
    Command,
    CommandError,
    Dismiss,
    Invite,
    ListPersonas,
    NameNextSpeaker,
    ShowHelp,
    ShowMailbox,
    ShowTrust,
    StopRound,
    parse_approvals,
    parse_moderate,
    parse_task,
)
from bot.slack.keys import channel_key
from bot.slack.slack_bot import SlackBot
from bot.slack.text import escape_for_slack
from storage import events

log = logging.getLogger(__name__)

PERSONA_USAGE = f"usage: {USAGE['persona']}"

Parser = Callable[[list[str]], Command]


def parse_persona(args: list[str]) -> Command:
    words = [a.lower() for a in args]
    if words == ["list"]:
        return ListPersonas()
    if len(words) == 2 and words[0] == "invite":
        return Invite(words[1])
    if len(words) == 2 and words[0] == "dismiss":
        return Dismiss(words[1])
    raise CommandError(PERSONA_USAGE)


def parse_trust(args: list[str]) -> Command:
    if args:
        raise CommandError(f"usage: {USAGE['trust']}")
    return ShowTrust()


def parse_stop(args: list[str]) -> Command:
    if args:
        raise CommandError(f"usage: {USAGE['stop']}")
    return StopRound()


def parse_next(args: list[str]) -> Command:
    if len(args) != 1:
        raise CommandError(f"usage: {USAGE['next']}")
    return NameNextSpeaker(args[0])


def parse_mailbox(args: list[str]) -> Command:
    if args:
        raise CommandError(f"usage: {USAGE['mailbox']}")
    return ShowMailbox()


def parse_roundtable(args: list[str]) -> Command:
    if [a.lower() for a in args] not in ([], ["help"]):
        raise CommandError(f"usage: {USAGE['roundtable']}")
    return ShowHelp()


SLASH_COMMANDS: dict[str, Parser] = {
    "/moderate": parse_moderate,
    "/stop": parse_stop,
    "/next": parse_next,
    "/persona": parse_persona,
    "/approvals": parse_approvals,
    "/trust": parse_trust,
    "/mailbox": parse_mailbox,
    "/task": lambda args: parse_task(" ".join(args)),
    "/roundtable": parse_roundtable,
}


def register(bot: SlackBot) -> None:
    for name, parse in SLASH_COMMANDS.items():
        bot.bolt.command(name)(_listener(bot, parse))


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


def _listener(bot: SlackBot, parse: Parser) -> Callable[..., Any]:
    async def on_command(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        invoked = slash_command(command)
        if invoked is None:
            log.warning("slash command without its team, channel, user or trigger ignored")
            await ack()
            return
        try:
            parsed = parse(invoked.text.split())
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
    actor = Actor(invoked.user_id, await bot.names.name_of(invoked.user_id), invoked.team_id)
    key = channel_key(invoked.team_id, invoked.channel_id)
    reply = await bot.roundtable.service.run_command(key, command, actor=actor)
    if not reply.announced:
        await respond(text=escape_for_slack(reply.reply), response_type="ephemeral")
