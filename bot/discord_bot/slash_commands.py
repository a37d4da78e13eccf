"""Discord's app commands: every command bot/commands.py declares for "discord", carried out by the channel service.

Each command's options come from its declaration; what arrives is joined into the text the command
would be typed as, and parsed as typed text. Every answer is ephemeral (only the person who typed
sees it); news such as "moderation on" reaches the channel separately, through the port. A refusal
or a usage line is answered at once; otherwise we defer first, because a change also posts that
news and Discord wants some answer within 3 seconds; the followup may come up to 15 minutes later.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Optional

import discord
from discord import app_commands

from bot.approval_desk import Actor
from bot.command_help import slash_description
from bot.command_values import Command, CommandError
from bot.commands import COMMANDS, Option, Spec, parse
from bot.discord_bot.delivery import split_message
from bot.discord_bot.inbound import key_for_channel, parent_key
from bot.service import ChannelService
from personas import Persona
from storage.channels import Place

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()

Render = Callable[[discord.Interaction], Awaitable[str]]
"""An answer Discord writes itself (the pending list, with links to each request's message)."""


def may_manage(interaction: discord.Interaction, manager_role: str) -> bool:
    """Manage Channels in this channel, or the configured manager role (by id)."""
    if interaction.permissions.manage_channels:
        return True
    roles = getattr(interaction.user, "roles", [])
    return bool(manager_role) and any(str(role.id) == manager_role for role in roles)  # by id: names repeat


# An autocomplete answer holds at most 25 choices, each named in 1 to 100 characters; one name too long and
# Discord refuses the whole answer (discord-api-spec openapi.json: InteractionApplicationCommandAutocomplete-
# CallbackStringData.choices maxItems 25, ApplicationCommandOptionStringChoice.name maxLength 100).
MAX_CHOICES = 25
MAX_CHOICE_NAME = 100


def choice_name(persona: Persona) -> str:
    """ "Display Name (id)", the display name shortened with an ellipsis when the whole would pass 100."""
    suffix = f" ({persona.id})"
    name = persona.display_name
    if len(name) + len(suffix) > MAX_CHOICE_NAME:
        name = name[: MAX_CHOICE_NAME - len(suffix) - 1].rstrip() + "…"
    return name + suffix


def add_slash_commands(
    tree: app_commands.CommandTree,
    service: ChannelService,
    personas: Mapping[str, Persona],
    manager_role: str,
    renders: Mapping[type, Render] | None = None,
) -> None:
    """One app command per declared command; `renders` answer some parsed values Discord's own way."""

    async def persona_choices(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        typed = current.casefold()
        matches = [p for p in personas.values() if typed in p.id or typed in p.display_name.casefold()]
        return [app_commands.Choice(name=choice_name(p), value=p.id) for p in matches][:MAX_CHOICES]

    async def carry_out(interaction: discord.Interaction, spec: Spec, text: str) -> None:
        try:
            # Discord checks the option types and range, but whatever arrives is parsed as typed text.
            command = parse(spec, text)
        except CommandError as exc:
            await reply_now(interaction, str(exc))
            return
        await run(interaction, service, command, manager_role, (renders or {}).get(type(command)))

    for spec in COMMANDS:
        if "discord" in spec.places:
            tree.add_command(_app_command(spec, carry_out, persona_choices))


def _app_command(
    spec: Spec,
    carry_out: Callable[[discord.Interaction, Spec, str], Awaitable[None]],
    persona_choices: Any,  # an autocomplete callback, as app_commands.autocomplete takes it
) -> app_commands.Command[Any, ..., None]:
    async def callback(interaction: discord.Interaction, **values: Any) -> None:
        await carry_out(interaction, spec, _text(spec.options, values))

    parameters = [
        inspect.Parameter("interaction", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=discord.Interaction)
    ]
    parameters += [_parameter(option) for option in spec.options]
    callback.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]  # discord.py reads it
    decorated: Any = app_commands.guild_only()(callback)
    if spec.options:
        decorated = app_commands.describe(**{o.name: o.description for o in spec.options})(decorated)
    if choices := {
        o.name: [app_commands.Choice(name=c, value=c) for c in o.choices] for o in spec.options if o.choices
    }:
        decorated = app_commands.choices(**choices)(decorated)
    if named := {o.name: persona_choices for o in spec.options if o.personas}:
        decorated = app_commands.autocomplete(**named)(decorated)
    return app_commands.Command(name=spec.name, description=slash_description(spec), callback=decorated)


def _parameter(option: Option) -> inspect.Parameter:
    kind: Any = app_commands.Range[int, option.whole[0], option.whole[1]] if option.whole else str
    return inspect.Parameter(
        option.name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=kind if option.required else Optional[kind],  # noqa: UP045  # a runtime annotation
        default=inspect.Parameter.empty if option.required else None,
    )


def _text(options: tuple[Option, ...], values: Mapping[str, Any]) -> str:
    """The options' values as the command would be typed: in declared order, a keyword option after its name."""
    words = []
    for option in options:
        value = values.get(option.name)
        if value is not None and str(value).strip():
            words += [option.name, str(value)] if option.keyword else [str(value)]
    return " ".join(words)


async def run(
    interaction: discord.Interaction,
    service: ChannelService,
    command: Command,
    manager_role: str,
    render: Render | None = None,
) -> None:
    """Carry out a command for this channel and answer privately; a non-manager's refusal at once."""
    if interaction.channel_id is None:
        await reply_now(interaction, "Use this in a server channel.")
        return
    key = key_for_channel(interaction.channel_id)
    actor = Actor(
        str(interaction.user.id), interaction.user.display_name, manager=may_manage(interaction, manager_role)
    )
    if (refused := service.permissions.manager_refusal(command, manager=actor.manager)) is not None:
        await reply_now(interaction, refused)  # the interaction says who manages the channel: no need to wait
        return
    await interaction.response.defer(ephemeral=True)
    try:
        if render is not None:
            text = await render(interaction)
        else:
            place = Place(f"discord:{interaction.guild_id}", parent_key(interaction.channel))
            text = (await service.run_command(key, command, actor=actor, place=place)).reply
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
