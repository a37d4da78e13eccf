"""What each surface lists of the command registry (bot/commands.py): /help's lines, the descriptions
Slack's manifest and Discord's app-command tree show, and manifest.yml's slash commands."""

from __future__ import annotations

from typing import Any

from bot.commands import COMMANDS, Spec, Surface


def _help(surface: Surface, spec: Spec) -> str | None:
    """The command's line on this surface, None when the surface has no such command."""
    if surface in spec.places:  # a slash command of the platform
        usage = f"/{spec.name}" if surface == "discord" else spec.usage  # Discord shows a command's options itself
    elif "typed" in spec.places and surface != "discord":  # Discord takes slash commands only
        usage = f"@Roundtable {spec.usage}" if surface == "slack" else spec.usage
    else:
        return None
    return f"{usage} — {spec.description}"


def help_text(surface: Surface) -> str:
    """Every command the surface takes, one line each."""
    lines = [line for spec in COMMANDS if (line := _help(surface, spec)) is not None]
    return "Commands:\n" + "\n".join(lines)


def slash_description(spec: Spec) -> str:
    """The description Slack's manifest and Discord's tree show (Discord takes at most 100 characters)."""
    return spec.description[0].upper() + spec.description[1:]


def manifest_slash_commands(url: str) -> list[dict[str, Any]]:
    """manifest.yml's features.slash_commands, as the registry declares them."""
    entries = []
    for spec in COMMANDS:
        if "slack" in spec.places:
            entry: dict[str, Any] = {"command": f"/{spec.name}", "url": url, "description": slash_description(spec)}
            if hint := spec.usage.removeprefix(f"/{spec.name}").strip():
                entry["usage_hint"] = hint
            entries.append({**entry, "should_escape": False})
    return entries
