"""/approvals and /trust. Decisions are made with the buttons on each request, so there is no /approve.

/approvals lists this channel's pending approvals with links to their requests; `mode` changes the
channel's approval mode and, like every change, needs Manage Channels or the manager role.
"""

from __future__ import annotations

import logging
from typing import Literal

import discord
from discord import app_commands

from bot.commands import SetApprovalMode, ShowTrust
from bot.discord_bot.approval_board import ApprovalBoard
from bot.discord_bot.inbound import key_for_channel
from bot.discord_bot.slash_commands import reply_now, run_service_command, send_privately
from bot.service import ChannelService
from graph.actions import ActionCall
from storage import approvals

log = logging.getLogger(__name__)

Mode = Literal["in-command", "in-the-loop", "on-the-loop"]


def add_approval_commands(
    tree: app_commands.CommandTree, service: ChannelService, board: ApprovalBoard, manager_role: str
) -> None:
    @tree.command(name="approvals", description="List the actions waiting for approval here, or set the approval mode")
    @app_commands.guild_only()
    @app_commands.describe(
        mode="in-command: every action waits; in-the-loop: sensitive ones wait; on-the-loop: none wait"
    )
    async def approvals_command(interaction: discord.Interaction, mode: Mode | None = None) -> None:
        if mode is not None:
            command = SetApprovalMode(mode)
            await run_service_command(interaction, service, command, changes=True, manager_role=manager_role)
            return
        if interaction.channel_id is None:
            await reply_now(interaction, "Use this in a server channel.")
            return
        await interaction.response.defer(ephemeral=True)
        try:
            text = await pending_list(service, board, interaction.channel_id, interaction.guild_id)
        except Exception:
            log.exception("/approvals failed")
            text = "Something went wrong; try again."
        await send_privately(interaction, text)

    @tree.command(name="trust", description="How far each persona is trusted, from its record of actions")
    @app_commands.guild_only()
    async def trust(interaction: discord.Interaction) -> None:
        await run_service_command(interaction, service, ShowTrust(), changes=False, manager_role=manager_role)


async def pending_list(service: ChannelService, board: ApprovalBoard, channel_id: int, guild_id: int | None) -> str:
    waiting = await approvals.pending(service.db, key_for_channel(channel_id))
    if not waiting:
        return "No approvals are pending here."
    rows = []
    for approval in waiting:
        persona = service.personas.get(approval.persona_id)
        wanted = ActionCall(approval.call_id, approval.action, approval.args).describe()
        row = (
            f"#{approval.id} {persona.display_name if persona else approval.persona_id} wants "
            f"{discord.utils.escape_markdown(wanted)}, expires <t:{int(approval.expires_at)}:R>"
        )
        place = await board.places.place(approval.id)
        if place is not None and guild_id is not None:
            row += f": https://discord.com/channels/{guild_id}/{place.channel_id}/{place.message_id}"
        rows.append(row)
    return "Pending approvals (approvers decide with the buttons on each request):\n" + "\n".join(rows)
