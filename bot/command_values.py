"""What a command means, as plain values, and the pure parsers that read them from typed text.

bot/commands.py declares each command (its name, help line, who may use it, where it appears and
its handler) and calls these parsers; a parser raises UsageError when the text does not fit, and
the registry answers with the command's usage line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from bot.command_errors import CommandError, UsageError
from bot.memory_values import MemoryCommand, SetQuiet
from bot.numbers import record_id, whole_number
from bot.rate_values import Rate
from bot.revisions import read_arguments
from bot.settings import MODERATOR_PROMPT_LIMIT


@dataclass(frozen=True)
class Moderate:
    mode: Literal["on", "off", "status"]
    max_turns: int | None = None

    @property
    def permission(self) -> str:
        return f"moderate_{self.mode}"


@dataclass(frozen=True)
class Invite:
    persona_id: str
    permission: ClassVar[str] = "persona_invite"


@dataclass(frozen=True)
class Dismiss:
    persona_id: str
    permission: ClassVar[str] = "persona_dismiss"


@dataclass(frozen=True)
class ListPersonas:
    permission: ClassVar[str] = "persona_list"


@dataclass(frozen=True)
class SetScene:
    text: str
    permission: ClassVar[str] = "scene"


@dataclass(frozen=True)
class PauseReplies:
    """/moderate pause (True) or resume (False)."""

    pause: bool

    @property
    def permission(self) -> str:
        return "moderate_pause" if self.pause else "moderate_resume"


@dataclass(frozen=True)
class ShowReasons:
    on: bool
    permission: ClassVar[str] = "moderate_reasons"


@dataclass(frozen=True)
class SetModeratorPrompt:
    text: str  # "" puts back the default prompt
    permission: ClassVar[str] = "moderate_prompt"


@dataclass(frozen=True)
class AllowRecruiting:
    on: bool
    permission: ClassVar[str] = "moderate_recruit"


@dataclass(frozen=True)
class StopRound:
    permission: ClassVar[str] = "stop"


@dataclass(frozen=True)
class NameNextSpeaker:
    persona: str  # an id or a display name, as typed
    permission: ClassVar[str] = "next"


ModerateCommand = Moderate | PauseReplies | ShowReasons | SetModeratorPrompt | AllowRecruiting


def parse_moderate(text: str) -> ModerateCommand:
    args = text.split()
    if not args:
        raise UsageError()
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
        raise UsageError()
    mode = args[0].lower()
    if mode != "on":
        if len(args) > 1:
            raise UsageError()
        return Moderate(mode)  # type: ignore[arg-type]
    if len(args) == 1:
        return Moderate("on")
    max_turns = whole_number(args[1], 1, 50) if len(args) == 2 else None
    if max_turns is None:
        raise UsageError("(max_turns is a whole number from 1 to 50)")
    return Moderate("on", max_turns)


@dataclass(frozen=True)
class ListApprovals:
    permission: ClassVar[str] = "approvals"


@dataclass(frozen=True)
class SetApprovalMode:
    mode: str
    permission: ClassVar[str] = "approvals_mode"


@dataclass(frozen=True)
class Decide:
    approval_id: int
    approve: bool
    comment: str = ""
    incident: bool = False
    always: bool = False  # /approve N always: an MCP tool then runs without asking in this channel

    @property
    def permission(self) -> str:
        return "approve" if self.approve else "reject"


@dataclass(frozen=True)
class ShowUsage:
    permission: ClassVar[str] = "usage"


@dataclass(frozen=True)
class ShowTrust:
    permission: ClassVar[str] = "trust"
    everywhere: bool = False  # /trust all: every workspace and guild (approvers of every channel only)


APPROVAL_MODES = ("in-command", "in-the-loop", "on-the-loop")


@dataclass(frozen=True)
class SettleUnknown:
    """An approver's answer to an action whose outcome is unknown: run it again, or close it."""

    approval_id: int
    retry: bool

    @property
    def permission(self) -> str:
        return "approvals_retry" if self.retry else "approvals_close"


@dataclass(frozen=True)
class ForgetTool:
    """/approvals forget SERVER.TOOL: an MCP tool approved always here waits for approval again."""

    tool: str
    permission: ClassVar[str] = "approvals_forget"


TOOL_NAME = re.compile(r"[^\s.]{1,64}\.\S{1,128}")  # SERVER.TOOL, as approvals and the audit log name it


def parse_approvals(rest: str) -> ListApprovals | SetApprovalMode | SettleUnknown | ForgetTool:
    args = rest.split()
    if not args:
        return ListApprovals()
    verb = args[0].lower()
    if verb == "mode" and len(args) == 2 and args[1].lower() in APPROVAL_MODES:
        return SetApprovalMode(args[1].lower())
    if verb in ("retry", "close") and len(args) == 2 and (approval_id := record_id(args[1])) is not None:
        return SettleUnknown(approval_id, retry=verb == "retry")
    if verb == "forget" and len(args) == 2:
        if not TOOL_NAME.fullmatch(args[1]) or not args[1].isprintable():
            raise UsageError("(name the tool as SERVER.TOOL, e.g. time.convert_time)")
        return ForgetTool(args[1])
    raise UsageError()


def parse_approve(rest: str) -> Decide:
    return _decision("approve", rest)


def parse_reject(rest: str) -> Decide:
    return _decision("reject", rest)


def _decision(name: str, rest: str) -> Decide:
    number, _, comment = rest.strip().partition(" ")
    approval_id = record_id(number)
    if approval_id is None:
        raise UsageError()
    comment = comment.strip()
    incident = False
    if name == "reject" and comment.split(" ", 1)[0].lower() == "incident":
        incident, comment = True, comment[len("incident") :].strip()
    always = name == "approve" and comment.lower() == "always"
    if name == "approve" and comment and not always:
        raise UsageError()
    if always:
        return Decide(approval_id, approve=True, always=True)
    return Decide(approval_id, approve=name == "approve", comment=comment, incident=incident)


@dataclass(frozen=True)
class ViewArguments:
    approval_id: int
    permission: ClassVar[str] = "view"


@dataclass(frozen=True)
class Revise:
    """Approve a request with arguments an approver edited (checked by the service, against the action)."""

    approval_id: int
    args: dict[str, Any]
    permission: ClassVar[str] = "revise"


def parse_view(rest: str) -> ViewArguments:
    approval_id = record_id(rest.strip())
    if approval_id is None:
        raise UsageError()
    return ViewArguments(approval_id)


def parse_revise(rest: str) -> Revise:
    number, _, text = rest.strip().partition(" ")
    approval_id = record_id(number)
    if approval_id is None or not text.strip():
        raise UsageError()
    args = read_arguments(text)
    if isinstance(args, str):
        raise CommandError(f"Approval #{approval_id} is unchanged: {args}.")
    return Revise(approval_id, args)


TaskVerb = Literal["start", "status", "result", "stop", "replan", "pause", "resume", "takeover", "done", "cancel"]
TASK_VERBS: tuple[str, ...] = ("status", "result", "stop", "replan", "pause", "resume", "takeover", "done", "cancel")


@dataclass(frozen=True)
class TaskCommand:
    verb: TaskVerb
    text: str = ""  # the task, the replan's instruction, a takeover's or cancellation's reason, a step's result
    step: int = 0  # /task done N
    rollback: bool = False  # /task cancel rollback: also ask to undo what the task did

    @property
    def permission(self) -> str:
        return "task" if self.verb == "start" else f"task_{self.verb}"


TASK_TEXT_LIMIT = 2000  # characters


def parse_task(rest: str) -> TaskCommand:
    text = rest.strip()
    verb, _, more = text.partition(" ")
    verb, more = verb.lower(), more.strip()
    if not text or (verb == "replan" and not more):
        raise UsageError()
    if len(text) > TASK_TEXT_LIMIT:
        raise CommandError(f"the task is {len(text)} characters; the most is {TASK_TEXT_LIMIT}")
    if verb in ("status", "result", "stop", "pause", "resume") and not more:
        return TaskCommand(verb)  # type: ignore[arg-type]
    if verb == "cancel" and more.partition(" ")[0].lower() == "rollback":
        return TaskCommand("cancel", more.partition(" ")[2].strip(), rollback=True)
    if verb in ("replan", "takeover", "cancel"):
        return TaskCommand(verb, more)  # type: ignore[arg-type]
    if verb == "done":
        number, _, result = more.partition(" ")
        step = record_id(number)
        if step is None:
            raise UsageError()
        return TaskCommand("done", result.strip(), step)
    return TaskCommand("start", text)


@dataclass(frozen=True)
class ShowMailbox:
    permission: ClassVar[str] = "mailbox"


@dataclass(frozen=True)
class ShowTools:
    permission: ClassVar[str] = "tools"


@dataclass(frozen=True)
class ShowOutbox:
    permission: ClassVar[str] = "outbox"
    everywhere: bool = False  # /outbox all: every channel's posts (approvers of every channel only)


@dataclass(frozen=True)
class ShowHelp:
    permission: ClassVar[str] = "help"


Command = (
    ModerateCommand
    | Invite
    | Dismiss
    | ListPersonas
    | SetScene
    | ListApprovals
    | SetApprovalMode
    | SettleUnknown
    | ForgetTool
    | Decide
    | ViewArguments
    | Revise
    | ShowTrust
    | ShowMailbox
    | MemoryCommand
    | SetQuiet
    | ShowUsage
    | Rate
    | ShowTools
    | ShowOutbox
    | StopRound
    | NameNextSpeaker
    | TaskCommand
    | ShowHelp
)


Parser = Callable[[str], Command]
"""Reads the text after the command's name; raises UsageError (or CommandError with its own line)."""


def no_words(command: Command) -> Parser:
    def parse(rest: str) -> Command:
        if rest.split():
            raise UsageError()
        return command

    return parse


def one_word(make: Callable[[str], Command]) -> Parser:
    def parse(rest: str) -> Command:
        args = rest.split()
        if len(args) != 1:
            raise UsageError()
        return make(args[0])

    return parse


def parse_persona(rest: str) -> Command:
    words = [a.lower() for a in rest.split()]
    if words == ["list"]:
        return ListPersonas()
    if len(words) == 2 and words[0] == "invite":
        return Invite(words[1])
    if len(words) == 2 and words[0] == "dismiss":
        return Dismiss(words[1])
    if len(words) == 2 and words[0] in ("quiet", "talk"):
        return SetQuiet(words[1], words[0] == "quiet")
    raise UsageError()


def parse_roundtable(rest: str) -> Command:
    if rest.lower().split() not in ([], ["help"]):
        raise UsageError()
    return ShowHelp()
