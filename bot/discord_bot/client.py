"""The Discord client: gateway messages become Inbound for the channel service; slash commands sync at start."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import discord
from discord import app_commands

from bot.command_values import ListApprovals
from bot.commands import CommandError, parse_command
from bot.discord_bot.approvals import ApprovalButton, ApprovalClicks, pending_list
from bot.discord_bot.inbound import to_inbound
from bot.discord_bot.slash_commands import Render, add_slash_commands
from bot.service import ChannelService
from personas import Persona

log = logging.getLogger(__name__)

USE_SLASH_COMMANDS = (
    "Commands here are Discord slash commands: type / and pick one; /roundtable help lists them. "
    "Approvers decide with the buttons on each approval request."
)


def roundtable_intents() -> discord.Intents:
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.message_content = True  # privileged: switch it on in the Developer Portal too
    return intents


class RoundtableClient(discord.Client):
    def __init__(self, *, manager_role: str = "", **options: Any) -> None:
        super().__init__(intents=roundtable_intents(), allowed_mentions=discord.AllowedMentions.none(), **options)
        self.tree = app_commands.CommandTree(self)
        self.manager_role = manager_role
        self.service: ChannelService | None = None
        self.approval_clicks: ApprovalClicks | None = None  # the approval buttons find it through interaction.client

    def serve(self, service: ChannelService, personas: Mapping[str, Persona], clicks: ApprovalClicks) -> None:
        """Hand events to the service. Separate from __init__ because the service's port needs this client."""
        self.service = service
        self.approval_clicks = clicks

        async def pending_with_links(interaction: discord.Interaction) -> str:
            assert interaction.channel_id is not None  # checked before anything is rendered
            return await pending_list(service, clicks.board, interaction.channel_id, interaction.guild_id)

        renders: dict[type, Render] = {ListApprovals: pending_with_links}
        add_slash_commands(self.tree, service, personas, self.manager_role, renders)

    async def setup_hook(self) -> None:
        # Before the gateway connects: the approval buttons of any request, also one posted before
        # a restart, reach ApprovalButton through its custom_id template.
        self.add_dynamic_items(ApprovalButton)
        synced = await self.tree.sync()
        log.info("slash commands synced: %s", ", ".join(f"/{c.name}" for c in synced))

    async def on_ready(self) -> None:
        log.info("connected to Discord as %s in %d server(s)", self.user, len(self.guilds))
        if self.application_id is not None:
            log.info("invite it to a server with %s", invite_url(self.application_id))

    async def on_message(self, message: discord.Message) -> None:
        if self.service is None or self.user is None:
            return
        inbound = to_inbound(message, self.user.id)
        if inbound is None:
            return
        if _looks_like_command(inbound.text):
            # Typed commands would skip the permission check the slash commands make.
            await message.reply(USE_SLASH_COMMANDS, mention_author=False)
            return
        try:
            # discord.py runs each gateway event in a task of its own: keep the channel's order.
            async with self.service.in_arrival_order(inbound.channel_key):
                reply = await self.service.handle(inbound)
            if reply is not None and not reply.announced:  # a flood limit's notice: a reply that pings nobody
                await message.reply(reply.reply, mention_author=False)
        except Exception:
            log.exception("message %s in %s could not be handled", inbound.event_id, inbound.channel_key)


def _looks_like_command(text: str) -> bool:
    try:
        return parse_command(text) is not None
    except CommandError:
        return True


# -- the invite link -------------------------------------------------------------------------------
# The permissions Roundtable asks for when it is invited, and the invite link itself.

INVITE_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    read_message_history=True,
    manage_webhooks=True,  # one webhook per channel lets each persona post under its own name and avatar
    use_application_commands=True,
)
INVITE_SCOPES = ("bot", "applications.commands")


def invite_url(application_id: int) -> str:
    return discord.utils.oauth_url(application_id, permissions=INVITE_PERMISSIONS, scopes=INVITE_SCOPES)
