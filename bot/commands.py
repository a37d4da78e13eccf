"""Channel commands, parsed into plain values. Parsing is pure; bot/service.py carries them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

USAGE = {
    "moderate": "/moderate on [max_turns] | off | status",
    "invite": "/invite PERSONA_ID",
    "dismiss": "/dismiss PERSONA_ID",
    "personas": "/personas",
    "scene": "/scene TEXT (an empty TEXT clears the scene)",
}


class CommandError(ValueError):
    """A malformed command; the message is the one-line usage to show the user."""


@dataclass(frozen=True)
class Moderate:
    mode: Literal["on", "off", "status"]
    max_turns: int | None = None


@dataclass(frozen=True)
class Invite:
    persona_id: str


@dataclass(frozen=True)
class Dismiss:
    persona_id: str


@dataclass(frozen=True)
class ListPersonas:
    pass


@dataclass(frozen=True)
class SetScene:
    text: str


Command = Moderate | Invite | Dismiss | ListPersonas | SetScene


def _usage(name: str) -> CommandError:
    return CommandError(f"usage: {USAGE[name]}")


def parse_moderate(args: list[str]) -> Moderate:
    if not args or args[0].lower() not in ("on", "off", "status"):
        raise _usage("moderate")
    mode = args[0].lower()
    if mode != "on":
        if len(args) > 1:
            raise _usage("moderate")
        return Moderate(mode)  # type: ignore[arg-type]
    if len(args) == 1:
        return Moderate("on")
    if len(args) > 2 or not args[1].isdigit() or not 1 <= int(args[1]) <= 50:
        raise CommandError(f"usage: {USAGE['moderate']} (max_turns is a whole number from 1 to 50)")
    return Moderate("on", int(args[1]))


def parse_command(text: str) -> Command | None:
    """The command in text, None when text is not a command, CommandError when it is malformed."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.lower()
    args = rest.split()
    if name == "moderate":
        return parse_moderate(args)
    if name in ("invite", "dismiss"):
        if len(args) != 1:
            raise _usage(name)
        return Invite(args[0].lower()) if name == "invite" else Dismiss(args[0].lower())
    if name == "personas":
        return ListPersonas()
    if name == "scene":
        return SetScene(rest.strip())
    known = ", ".join(f"/{n}" for n in USAGE)
    raise CommandError(f"unknown command /{name}; try {known}")
