"""Channel commands, parsed into plain values. Parsing is pure; bot/service.py carries them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.numbers import record_id, whole_number

USAGE = {
    "moderate": (
        "/moderate on [max_turns] | off | status | pause | resume | reasons on|off | prompt TEXT|reset"
        " | recruit on|off"
    ),
    "stop": "/stop",
    "next": "/next PERSONA",
    "invite": "/invite PERSONA_ID",
    "dismiss": "/dismiss PERSONA_ID",
    "personas": "/personas",
    "scene": "/scene TEXT (an empty TEXT clears the scene)",
    "approvals": "/approvals [mode in-command|in-the-loop|on-the-loop | retry N | close N]",
    "approve": "/approve N",
    "reject": "/reject N [incident] [feedback]",
    "trust": "/trust",
}
MAX_NAME_CHARS = 32  # a longer (or unprintable) command name is not echoed back


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




def _usage(name: str) -> CommandError:
    return CommandError(f"usage: {USAGE[name]}")


@dataclass(frozen=True)
class PauseReplies:
    """/moderate pause (True) or resume (False)."""

    pause: bool


@dataclass(frozen=True)
class ShowReasons:
    on: bool


@dataclass(frozen=True)
class SetModeratorPrompt:
    text: str  # "" puts back the default prompt


@dataclass(frozen=True)
class AllowRecruiting:
    on: bool


@dataclass(frozen=True)
class StopRound:
    pass


@dataclass(frozen=True)
class NameNextSpeaker:
    persona: str  # an id or a display name, as typed


MODERATOR_PROMPT_LIMIT = 2000

ModerateCommand = Moderate | PauseReplies | ShowReasons | SetModeratorPrompt | AllowRecruiting


def parse_moderate(args: list[str]) -> ModerateCommand:
    if not args:
        raise _usage("moderate")
    verb, rest = args[0].lower(), args[1:]
    if verb in ("pause", "resume") and not rest:
        return PauseReplies(verb == "pause")
    if verb in ("reasons", "recruit") and len(rest) == 1 and rest[0].lower() in ("on", "off"):
        on = rest[0].lower() == "on"
        return ShowReasons(on) if verb == "reasons" else AllowRecruiting(on)
    if verb == "prompt" and rest:
        text = " ".join(rest)
        if text.lower() == "reset":
            return SetModeratorPrompt("")
        if len(text) > MODERATOR_PROMPT_LIMIT:
            raise CommandError(f"the moderator prompt is {len(text)} characters; the most is {MODERATOR_PROMPT_LIMIT}")
        return SetModeratorPrompt(text)
    if verb not in ("on", "off", "status"):
        raise _usage("moderate")
    mode = args[0].lower()
    if mode != "on":
        if len(args) > 1:
            raise _usage("moderate")
        return Moderate(mode)  # type: ignore[arg-type]
    if len(args) == 1:
        return Moderate("on")
    max_turns = whole_number(args[1], 1, 50) if len(args) == 2 else None
    if max_turns is None:
        raise CommandError(f"usage: {USAGE['moderate']} (max_turns is a whole number from 1 to 50)")
    return Moderate("on", max_turns)


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
    if name == "approvals":
        return parse_approvals(args)
    if name in ("approve", "reject"):
        return parse_decision(name, rest)
    if name == "trust":
        return ShowTrust()
    if name == "stop":
        if args:
            raise _usage("stop")
        return StopRound()
    if name == "next":
        if len(args) != 1:
            raise _usage("next")
        return NameNextSpeaker(args[0])
    shown = f" /{name}" if name.isprintable() and len(name) <= MAX_NAME_CHARS else ""
    raise CommandError(f"unknown command{shown}; try {', '.join(f'/{n}' for n in USAGE)}")


@dataclass(frozen=True)
class ListApprovals:
    pass


@dataclass(frozen=True)
class SetApprovalMode:
    mode: str


@dataclass(frozen=True)
class Decide:
    approval_id: int
    approve: bool
    comment: str = ""
    incident: bool = False


@dataclass(frozen=True)
class ShowTrust:
    pass


APPROVAL_MODES = ("in-command", "in-the-loop", "on-the-loop")


@dataclass(frozen=True)
class SettleUnknown:
    """An approver's answer to an action whose outcome is unknown: run it again, or close it."""

    approval_id: int
    retry: bool


def parse_approvals(args: list[str]) -> ListApprovals | SetApprovalMode | SettleUnknown:
    if not args:
        return ListApprovals()
    verb = args[0].lower()
    if verb == "mode" and len(args) == 2 and args[1].lower() in APPROVAL_MODES:
        return SetApprovalMode(args[1].lower())
    if verb in ("retry", "close") and len(args) == 2 and (approval_id := record_id(args[1])) is not None:
        return SettleUnknown(approval_id, retry=verb == "retry")
    raise _usage("approvals")


def parse_decision(name: str, rest: str) -> Decide:
    number, _, comment = rest.strip().partition(" ")
    approval_id = record_id(number)
    if approval_id is None:
        raise _usage(name)
    comment = comment.strip()
    incident = False
    if name == "reject" and comment.split(" ", 1)[0].lower() == "incident":
        incident, comment = True, comment[len("incident") :].strip()
    if name == "approve" and comment:
        raise _usage(name)
    return Decide(approval_id, approve=name == "approve", comment=comment, incident=incident)


Command = (
    ModerateCommand | Invite | Dismiss | ListPersonas | SetScene | ListApprovals | SetApprovalMode | SettleUnknown
    | Decide | ShowTrust | StopRound | NameNextSpeaker
)
