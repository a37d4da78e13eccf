"""Channel commands, parsed into plain values. Parsing is pure; bot/service.py carries them out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bot.config import MODERATOR_PROMPT_LIMIT
from bot.numbers import record_id, whole_number
from bot.revisions import read_arguments

Surface = Literal["console", "slack", "discord"]
SLASH: tuple[Surface, ...] = ("slack", "discord")


@dataclass(frozen=True)
class HelpRow:
    """One command in the help, on one line: how it is typed and what it does."""

    usage: str
    description: str
    typed: bool = True  # parse_command takes it: in the console, and on Slack in a message to @Roundtable
    slash: tuple[Surface, ...] = SLASH  # the platforms with a slash command of this name


COMMANDS: dict[str, HelpRow] = {
    "moderate": HelpRow(
        "/moderate on [max_turns] | off | status | pause | resume | reasons on|off | prompt TEXT|reset"
        " | recruit on|off",
        "turn the moderator on or off, pause or resume replies, or show its status",
    ),
    "stop": HelpRow("/stop", "end the running round after the current turn"),
    "next": HelpRow("/next PERSONA", "name the persona who speaks next"),
    "persona": HelpRow(
        "/persona list | invite PERSONA_ID | dismiss PERSONA_ID", "list, invite or dismiss personas here", typed=False
    ),
    "invite": HelpRow("/invite PERSONA_ID", "bring a persona into this channel", slash=()),
    "dismiss": HelpRow("/dismiss PERSONA_ID", "send a persona away; it keeps its memory", slash=()),
    "personas": HelpRow("/personas", "list the personas, marking those in this channel", slash=()),
    "scene": HelpRow("/scene TEXT (an empty TEXT clears the scene)", "set the scene every persona is told", slash=()),
    "approvals": HelpRow(
        "/approvals [mode in-command|in-the-loop|on-the-loop | retry N | close N]",
        "list the pending approvals, or set the approval mode",
    ),
    "approve": HelpRow("/approve N", "approve action request N", slash=()),
    "reject": HelpRow(
        "/reject N [incident] [feedback]", "reject action request N, with feedback for the persona", slash=()
    ),
    "view": HelpRow("/view N", "show action request N's full arguments (approvers only)", slash=()),
    "revise": HelpRow(
        "/revise N {json}",
        "approve request N with edited arguments: the whole JSON object, as /view N shows it",
        slash=(),
    ),
    "trust": HelpRow("/trust", "show how far each persona is trusted"),
    "mailbox": HelpRow("/mailbox", "show the personas' private notes here and how many were dropped (approvers only)"),
    "task": HelpRow(
        "/task TEXT | status | stop | replan TEXT",
        "give the team a task (planned, then done step by step), show its plan, stop it, or change what is left",
    ),
    "help": HelpRow("/help", "list these commands", slash=()),
    "roundtable": HelpRow("/roundtable help", "list these commands", typed=False),
}
USAGE = {name: row.usage for name, row in COMMANDS.items()}
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
    parse = PARSERS.get(name)
    if parse is None:
        shown = f" /{name}" if name.isprintable() and len(name) <= MAX_NAME_CHARS else ""
        raise CommandError(f"unknown command{shown}; try {', '.join(f'/{n}' for n in PARSERS)}")
    return parse(rest)


def _no_words(name: str, command: Command) -> Callable[[str], Command]:
    def parse(rest: str) -> Command:
        if rest.split():
            raise _usage(name)
        return command

    return parse


def _one_word(name: str, make: Callable[[str], Command]) -> Callable[[str], Command]:
    def parse(rest: str) -> Command:
        args = rest.split()
        if len(args) != 1:
            raise _usage(name)
        return make(args[0])

    return parse


def _help(surface: Surface, name: str, row: HelpRow) -> str | None:
    """The command's line on this surface, None when the surface has no such command."""
    if surface in row.slash:
        usage = f"/{name}" if surface == "discord" else row.usage  # Discord shows a command's options itself
    elif row.typed and surface != "discord":  # Discord takes slash commands only
        usage = f"@Roundtable {row.usage}" if surface == "slack" else row.usage
    else:
        return None
    return f"{usage} — {row.description}"


def help_text(surface: Surface) -> str:
    """Every command the surface takes, one line each, from COMMANDS."""
    lines = [line for name, row in COMMANDS.items() if (line := _help(surface, name, row)) is not None]
    return "Commands:\n" + "\n".join(lines)


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


@dataclass(frozen=True)
class ViewArguments:
    approval_id: int


@dataclass(frozen=True)
class Revise:
    """Approve a request with arguments an approver edited (checked by the service, against the action)."""

    approval_id: int
    args: dict[str, Any]


def parse_view(rest: str) -> ViewArguments:
    approval_id = record_id(rest.strip())
    if approval_id is None:
        raise _usage("view")
    return ViewArguments(approval_id)


def parse_revise(rest: str) -> Revise:
    number, _, text = rest.strip().partition(" ")
    approval_id = record_id(number)
    if approval_id is None or not text.strip():
        raise _usage("revise")
    args = read_arguments(text)
    if isinstance(args, str):
        raise CommandError(f"Approval #{approval_id} is unchanged: {args}.")
    return Revise(approval_id, args)


@dataclass(frozen=True)
class TaskCommand:
    verb: Literal["start", "status", "stop", "replan"]
    text: str = ""  # the task, or the replan's instruction


TASK_TEXT_LIMIT = 2000  # characters


def parse_task(rest: str) -> TaskCommand:
    text = rest.strip()
    verb, _, more = text.partition(" ")
    if not text or (verb.lower() == "replan" and not more.strip()):
        raise _usage("task")
    if len(text) > TASK_TEXT_LIMIT:
        raise CommandError(f"the task is {len(text)} characters; the most is {TASK_TEXT_LIMIT}")
    if verb.lower() in ("status", "stop") and not more.strip():
        return TaskCommand(verb.lower())  # type: ignore[arg-type]
    if verb.lower() == "replan":
        return TaskCommand("replan", more.strip())
    return TaskCommand("start", text)


@dataclass(frozen=True)
class ShowMailbox:
    pass


@dataclass(frozen=True)
class ShowHelp:
    pass


Command = (
    ModerateCommand
    | Invite
    | Dismiss
    | ListPersonas
    | SetScene
    | ListApprovals
    | SetApprovalMode
    | SettleUnknown
    | Decide
    | ViewArguments
    | Revise
    | ShowTrust
    | ShowMailbox
    | StopRound
    | NameNextSpeaker
    | TaskCommand
    | ShowHelp
)

PARSERS: dict[str, Callable[[str], Command]] = {
    "moderate": lambda rest: parse_moderate(rest.split()),
    "stop": _no_words("stop", StopRound()),
    "next": _one_word("next", NameNextSpeaker),
    "invite": _one_word("invite", lambda word: Invite(word.lower())),
    "dismiss": _one_word("dismiss", lambda word: Dismiss(word.lower())),
    "personas": lambda rest: ListPersonas(),
    "scene": lambda rest: SetScene(rest.strip()),
    "approvals": lambda rest: parse_approvals(rest.split()),
    "approve": lambda rest: parse_decision("approve", rest),
    "reject": lambda rest: parse_decision("reject", rest),
    "view": parse_view,
    "revise": parse_revise,
    "trust": lambda rest: ShowTrust(),
    "mailbox": _no_words("mailbox", ShowMailbox()),
    "task": parse_task,
    "help": lambda rest: ShowHelp(),
}
"""What parse_command takes: the commands of COMMANDS that are typed."""
