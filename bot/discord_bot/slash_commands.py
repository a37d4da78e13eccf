"""/moderate, /stop, /next, /persona, /task, /mailbox and /roundtable help: Discord's slash commands, carried out by the channel service.

Every answer is ephemeral (only the person who typed sees it); news such as "moderation on" reaches
the channel separately, through the port. We defer first because a change also posts that news,
and Discord wants some answer within 3 seconds; the followup may come up to 15 minutes later.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal

import discord
from discord import app_commands

from bot.approval_desk import Actor
from bot.commands import (
    Command,
    CommandError,
    Dismiss,
    Invite,
    ListPersonas,
    NameNextSpeaker,
    ShowHelp,
    ShowMailbox,
    StopRound,
    parse_moderate,
    parse_task,
)
from bot.discord_bot.delivery import split_message
from bot.discord_bot.inbound import key_for_channel
from bot.service import ChannelService
from personas import Persona

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()


def may_manage(interaction: discord.Interaction, manager_role: str) -> bool:
    """Manage Channels in this channel, or the configured manager role (by name or id)."""
    if interaction.permissions.manage_channels:
        return True
    roles = getattr(interaction.user, "roles", [])
    return bool(manager_role) and any(manager_role in (role.name, str(role.id)) for role in roles)


def add_slash_commands(
    tree: app_commands.CommandTree, service: ChannelService, personas: Mapping[str, Persona], manager_role: str
) -> None:
    async def run(interaction: discord.Interaction, command: Command, *, changes: bool) -> None:
        await run_service_command(interaction, service, command, changes=changes, manager_role=manager_role)

    @tree.command(name="moderate", description="Let a moderator pick who speaks next, or answer once per message")
    @app_commands.guild_only()
    @app_commands.describe(
        mode="on, off, status, pause, resume, reasons, recruit or prompt",
        max_turns="with on: how many turns a moderated round may take (1-50)",
        setting="with reasons or recruit: on or off",
        text="with prompt: the moderator's prompt for this channel, or reset",
    )
    async def moderate(
        interaction: discord.Interaction,
        mode: Literal["on", "off", "status", "pause", "resume", "reasons", "recruit", "prompt"],
        max_turns: app_commands.Range[int, 1, 50] | None = None,
        setting: Literal["on", "off"] | None = None,
        text: str | None = None,
    ) -> None:
        words = [str(mode)] + [str(v) for v in (max_turns, setting) if v is not None] + (text.split() if text else [])
        try:
            # Discord checks the option types and range, but whatever arrives is parsed as typed text.
            command = parse_moderate(words)
        except CommandError as exc:
            await reply_now(interaction, str(exc))
            return
        await run(interaction, command, changes=mode != "status")

    @tree.command(name="stop", description="End the running round after the current turn")
    @app_commands.guild_only()
    async def stop(interaction: discord.Interaction) -> None:
        await run(interaction, StopRound(), changes=False)

    @tree.command(name="next", description="Name the persona who speaks next")
    @app_commands.guild_only()
    @app_commands.describe(persona="the persona who speaks next")
    async def next_speaker(interaction: discord.Interaction, persona: str) -> None:
        await run(interaction, NameNextSpeaker(persona), changes=False)

    @tree.command(name="persona", description="List the personas, or invite or dismiss one in this channel")
    @app_commands.guild_only()
    @app_commands.describe(action="list, invite or dismiss", persona_id="the persona to invite or dismiss")
    async def persona(
        interaction: discord.Interaction,
        action: Literal["list", "invite", "dismiss"],
        persona_id: str | None = None,
    ) -> None:
        if action == "list":
            await run(interaction, ListPersonas(), changes=False)
        elif not persona_id:
            await reply_now(interaction, f"usage: /persona {action} persona_id")
        else:
            wanted = persona_id.strip().lower()
            await run(interaction, Invite(wanted) if action == "invite" else Dismiss(wanted), changes=True)

    @tree.command(name="task", description="Give the team a task, show its plan, stop it, or change what is left")
    @app_commands.guild_only()
    @app_commands.describe(text="the task; or status, stop, or replan TEXT")
    async def task(interaction: discord.Interaction, text: str) -> None:
        try:
            command = parse_task(text)
        except CommandError as exc:
            await reply_now(interaction, str(exc))
            return
        await run(interaction, command, changes=False)  # anyone here may give the team work, as in a message

    @tree.command(name="mailbox", description="The personas' private notes here, and the drops (approvers only)")
    @app_commands.guild_only()
    async def mailbox(interaction: discord.Interaction) -> None:
        await run(interaction, ShowMailbox(), changes=False)  # the service lets approvers only read it

    @tree.command(name="roundtable", description="List every command, one line each")
    @app_commands.guild_only()
    @app_commands.describe(action="help: list the commands")
    async def roundtable(interaction: discord.Interaction, action: Literal["help"]) -> None:
        await run(interaction, ShowHelp(), changes=False)

    @persona.autocomplete("persona_id")
    async def persona_choices(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        typed = current.casefold()
        matches = [p for p in personas.values() if typed in p.id or typed in p.display_name.casefold()]
        return [app_commands.Choice(name=f"{p.display_name} ({p.id})", value=p.id) for p in matches][:25]


async def run_service_command(
    interaction: discord.Interaction, service: ChannelService, command: Command, *, changes: bool, manager_role: str
) -> None:
    """Carry out a command for this channel and answer privately; `changes` needs may_manage."""
    if changes and not may_manage(interaction, manager_role):
        needed = f"Manage Channels or the {manager_role} role" if manager_role else "Manage Channels"
        await reply_now(interaction, f"Changing this needs {needed}.")
        return
    if interaction.channel_id is None:
        await reply_now(interaction, "Use this in a server channel.")
        return
    await interaction.response.defer(ephemeral=True)
    try:
        actor = Actor(str(interaction.user.id), interaction.user.display_name)
        text = (await service.run_command(key_for_channel(interaction.channel_id), command, actor=actor)).reply
    except Exception:
        log.exception("slash command %r failed", command)
        text = "Something went wrong; nothing was changed."
    await send_privately(interaction, text)


async def send_privately(interaction: discord.Interaction, text: str) -> None:
    """Followups to a deferred interaction, as many as the text needs."""
    for chunk in split_message(text):
        await interaction.followup.send(chunk, ephemeral=True, allowed_mentions=NO_MENTIONS)


async def reply_now(interaction: discord.Interaction, text: str) -> None:
    await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
