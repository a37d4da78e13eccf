"""The Discord client: gateway messages become Inbound for the channel service; slash commands sync at start."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import discord
from discord import app_commands

from bot.command_values import CommandError, ListApprovals
from bot.commands import parse_command
from bot.discord_bot.approvals import ApprovalButton, ApprovalClicks, pending_list
from bot.discord_bot.inbound import to_inbound
from bot.discord_bot.reactions import keep_reason, take_reaction
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
    intents.guild_reactions = True  # GUILD_MESSAGE_REACTIONS: 👍 and 👎 on personas' posts (reactions.py)
    return intents


class RoundtableClient(discord.AutoShardedClient):
    """Connects the shards `shard_ids` of `shard_count` (0: as many as Discord recommends; no ids:
    all of them). Discord sends each server's events to one shard, so processes holding different
    shards of one bot never see the same message; they share the database, so any of them can
    decide an approval another one asked for."""

    def __init__(
        self,
        *,
        manager_role: str = "",
        shard_count: int = 0,
        shard_ids: Sequence[int] = (),
        gateway_pinned: bool = False,
        **options: Any,
    ) -> None:
        if shard_count:
            options["shard_count"] = shard_count
        if shard_ids:
            options["shard_ids"] = list(shard_ids)
        super().__init__(intents=roundtable_intents(), allowed_mentions=discord.AllowedMentions.none(), **options)
        self._gateway_pinned = gateway_pinned  # [discord] gateway_url set: connect there, not where Discord says
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

    async def launch_shards(self) -> None:
        if self.shard_count is None and self._gateway_pinned:
            # discord.py takes the count and the address from GET /gateway/bot; keep our address.
            self.shard_count, _, _ = await self.http.get_bot_gateway()
        await super().launch_shards()

    async def setup_hook(self) -> None:
        # Before the gateway connects: the approval buttons of any request, also one posted before
        # a restart, reach ApprovalButton through its custom_id template.
        self.add_dynamic_items(ApprovalButton)
        synced = await self.tree.sync()
        log.info("slash commands synced: %s", ", ".join(f"/{c.name}" for c in synced))

    async def on_ready(self) -> None:
        shards = ", ".join(str(shard) for shard in sorted(self.shards))
        log.info(
            "connected to Discord as %s in %d server(s), shard(s) %s of %s",
            self.user,
            len(self.guilds),
            shards,
            self.shard_count,
        )
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
            if self.service.votes is not None:  # perhaps a 👎's reason
                await keep_reason(self.service.votes, inbound)
        except Exception:
            log.exception("message %s in %s could not be handled", inbound.event_id, inbound.channel_key)

    async def on_raw_reaction_add(self, reaction: discord.RawReactionActionEvent) -> None:
        if self.service is not None and self.service.votes is not None and self.user is not None:
            await take_reaction(self.service.votes, reaction, self.user.id)

    async def on_raw_reaction_remove(self, reaction: discord.RawReactionActionEvent) -> None:
        await self.on_raw_reaction_add(reaction)  # the event says which it is


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
