"""DiscordPort: the outbound port (graph/port.py) for Discord.

Persona posts go through a webhook per channel under the persona's name and avatar (delivery.py).
A failed delivery is logged, never raised, as in the Slack port: the line is already stored, and a
lost post must not fail the round. Only `execute` raises, because its caller turns the error into
the persona's tool result.
"""

from __future__ import annotations

import logging

import aiohttp
import discord

from bot.discord_bot.delivery import Delivery
from bot.discord_bot.inbound import channel_id_of, key_for_channel
from bot.discord_bot.targets import target_channel
from graph.actions import ActionCall
from graph.approval_flow import outcome_text
from personas import Persona
from storage.records import Approval

log = logging.getLogger(__name__)

_DELIVERY_ERRORS = (discord.HTTPException, aiohttp.ClientError, TimeoutError)


class DiscordPort:
    """Channel keys are "discord:<channel or thread id>". The `thread` arguments are unused: a Discord
    thread is a channel with a key of its own."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client
        self._delivery = Delivery(client)

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        try:
            await self._delivery.as_persona(await self._delivery.destination(channel_key), persona, text)
        except _DELIVERY_ERRORS as exc:
            log.warning("%s's post in %s was not delivered: %s", persona.id, channel_key, _describe(exc))

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        try:
            await self._delivery.as_bot(await self._delivery.destination(channel_key), text)
        except _DELIVERY_ERRORS as exc:
            log.warning("a notice in %s was not delivered: %s", channel_key, _describe(exc))

    async def trace(self, channel_key: str, text: str) -> None:
        log.debug("trace %s: %s", channel_key, text)

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        await self.notice(channel_key, f"For the approvers: {text}", None)

    # Plain text for now: the approval buttons (a persistent view, see RoundtableClient.setup_hook)
    # take over request_approval and show_decision.
    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        call = ActionCall(approval.call_id, approval.action, approval.args)
        expires = f"<t:{int(approval.expires_at)}:R>"  # Discord shows it as "in 30 minutes"
        text = f"Approval #{approval.id}: {persona.display_name} wants {call.describe()}. It expires {expires}."
        await self.notice(approval.channel_key, text, None)

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        outcome = outcome_text(approval.status, approval.decided_by, approval.comment, approval.result)
        await self.notice(approval.channel_key, f"Action #{approval.id} by {persona.display_name}: {outcome}", None)

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        if call.name == "publish_post":
            named = call.args["channel"]
        elif call.name == "send_message":
            named = call.args["to"]  # a channel; Roundtable does not direct-message people on Discord
        else:
            raise ValueError(f"Discord cannot run {call.name}")
        target = await target_channel(self._client, channel_id_of(channel_key), named)
        where = await self._delivery.destination(key_for_channel(target.id))
        await self._delivery.as_persona(where, persona, call.args["text"])
        return f"posted in #{target.name}"


def _describe(exc: BaseException) -> str:
    """Status and Discord error code, or the exception type; never request details or message text."""
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status} (Discord code {exc.code})"
    return type(exc).__name__
