"""Slash commands: /moderate, /persona, /approvals and /trust, carried out by the channel service.

Slack wants an answer within 3 seconds. A malformed command is answered in the ack itself
(ephemeral usage); a valid one is acked empty at once and carried out in the background, because
the service's announcement is a chat.postMessage that may wait on Slack's rate limits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.commands import (
    USAGE,
    Command,
    CommandError,
    Dismiss,
    Invite,
    ListPersonas,
    ShowTrust,
    parse_approvals,
    parse_moderate,
)
from bot.service import Actor
from bot.slack.keys import channel_key
from bot.slack.slack_bot import SlackBot
from bot.slack.text import escape_for_slack

PERSONA_USAGE = "usage: /persona list | invite PERSONA_ID | dismiss PERSONA_ID"

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


SLASH_COMMANDS: dict[str, Parser] = {
    "/moderate": parse_moderate,
    "/persona": parse_persona,
    "/approvals": parse_approvals,
    "/trust": parse_trust,
}


def register(bot: SlackBot) -> None:
    for name, parse in SLASH_COMMANDS.items():
        bot.bolt.command(name)(_listener(bot, parse))


def _listener(bot: SlackBot, parse: Parser) -> Callable[..., Any]:
    async def on_command(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            parsed = parse(str(command.get("text") or "").split())
        except CommandError as exc:
            await ack(text=escape_for_slack(str(exc)), response_type="ephemeral")
            return
        await ack()
        key = channel_key(command["team_id"], command["channel_id"])
        work = carry_out(bot, key, parsed, str(command["user_id"]), str(command["team_id"]), respond)
        bot.work.start(work, name=f"slack {command.get('command')} in {key}")

    return on_command


async def carry_out(
    bot: SlackBot, key: str, command: Command, user_id: str, team_id: str, respond: AsyncRespond
) -> None:
    actor = Actor(user_id, await bot.names.name_of(user_id), team_id)
    reply = await bot.roundtable.service.run_command(key, command, actor=actor)
    if not reply.announced:
        await respond(text=escape_for_slack(reply.reply), response_type="ephemeral")
