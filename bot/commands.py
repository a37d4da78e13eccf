"""Every command, declared once: its name, usage and help line, its parser, who may use it, where it
appears, its Discord options and its handlers.

The console and Slack's `@Roundtable /…` text (place "typed"), Slack's slash commands ("slack"),
Discord's app-command tree ("discord"), `/help` on every surface and manifest.yml's slash commands
are all read from COMMANDS; tests/test_command_registry.py fails when one of them disagrees.
The parsed values and their pure parsers live in bot/command_values.py; the handlers in
bot/command_handlers.py; what each surface lists (/help, the manifest) in bot/command_help.py.
docs/commands.md ("Adding a command") shows how a new one is declared.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot import command_handlers as run
from bot.approval_desk import CommandReply
from bot.command_values import (
    APPROVAL_MODES,
    TASK_VERBS,
    AllowRecruiting,
    Command,
    CommandError,
    Decide,
    Dismiss,
    ForgetTool,
    Invite,
    ListApprovals,
    ListPersonas,
    Moderate,
    NameNextSpeaker,
    Parser,
    PauseReplies,
    Revise,
    SetApprovalMode,
    SetModeratorPrompt,
    SetScene,
    SettleUnknown,
    ShowHelp,
    ShowMailbox,
    ShowOutbox,
    ShowReasons,
    ShowTools,
    ShowTrust,
    ShowUsage,
    StopRound,
    TaskCommand,
    UsageError,
    ViewArguments,
    no_words,
    one_word,
    parse_approvals,
    parse_approve,
    parse_moderate,
    parse_persona,
    parse_reject,
    parse_revise,
    parse_roundtable,
    parse_task,
    parse_view,
)
from bot.memory_values import PERSONA_VERBS, MemoryCommand, SetQuiet, parse_memory
from bot.rate_command import rate
from bot.rate_values import Rate, parse_rate
from bot.scoped_views import here_or_all

Surface = Literal["console", "slack", "discord"]
Place = Literal["typed", "slack", "discord"]  # typed: the console, and Slack messages to @Roundtable
Need = Literal["manager", "approver"]
Handler = Callable[[run.Call, Any], Awaitable[CommandReply]]

EVERYWHERE: frozenset[Place] = frozenset({"typed", "slack", "discord"})
TYPED: frozenset[Place] = frozenset({"typed"})
MANAGER: frozenset[Need] = frozenset({"manager"})
APPROVER: frozenset[Need] = frozenset({"approver"})
MAX_NAME_CHARS = 32  # a longer (or unprintable) command name is not echoed back
MAX_COMMAND_CHARS = 12_000  # past the name; /revise may carry a whole post (8,000 characters) as JSON
TOO_LONG = f"That command is longer than {MAX_COMMAND_CHARS:,} characters; nothing was done."

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Option:
    """One option of the Discord app command; its value becomes words of the typed text, in order."""

    name: str
    description: str
    choices: tuple[str, ...] = ()
    required: bool = False
    whole: tuple[int, int] | None = None  # an integer from..to
    keyword: bool = False  # the text reads "NAME VALUE" ("mode in-command"), not only "VALUE"
    personas: bool = False  # Discord suggests persona ids while it is typed


@dataclass(frozen=True)
class Spec:
    """One command. `handlers` carry out what `parse` returns, by the parsed value's class."""

    name: str
    usage: str  # as typed, with its arguments: "/next PERSONA"
    description: str  # lower case, one line: the help, the Slack manifest and Discord's tree
    parse: Parser
    handlers: Mapping[type, Handler]
    places: frozenset[Place] = EVERYWHERE
    options: tuple[Option, ...] = ()
    verbs: tuple[str, ...] = ()  # first words that are permissions of their own: "moderate_prompt"
    needs: Mapping[str, frozenset[Need]] = field(default_factory=dict)  # by permission; else anyone
    doing: Mapping[str, str] = field(default_factory=dict)  # what a permission does, for its refusal
    spelling_of: str = ""  # another command this one spells differently: /invite is /persona invite
    bare: bool = True  # the name alone is a permission too (/approvals lists); False when a verb is required

    def permissions(self) -> list[str]:
        """The names [permissions] knows this command by; a parsed value's `permission` is one of them."""
        if self.spelling_of:
            return []
        return [self.name] * self.bare + [f"{self.name}_{verb}" for verb in self.verbs]


APPROVE_HELP = "approve action request N; /approve N always: an MCP tool then runs without asking here"
TOOLS_HELP = "list the MCP servers and the tools this channel's personas may use on each"
MODERATE_VERBS = ("on", "off", "status", "pause", "resume", "reasons", "prompt", "recruit")

COMMANDS: tuple[Spec, ...] = (
    Spec(
        "moderate",
        "/moderate on [max_turns] | off | status | pause | resume | reasons on|off | prompt TEXT|reset"
        " | recruit on|off",
        "turn the moderator on or off, pause or resume replies, or show its status",
        parse_moderate,
        {
            Moderate: run.moderate,
            PauseReplies: run.pause_replies,
            ShowReasons: run.show_reasons,
            AllowRecruiting: run.allow_recruiting,
            SetModeratorPrompt: run.set_moderator_prompt,
        },
        options=(
            Option("mode", "on, off, status, pause, resume, reasons, recruit or prompt", MODERATE_VERBS, True),
            Option("max_turns", "with on: how many turns a moderated round may take (1-50)", whole=(1, 50)),
            Option("setting", "with reasons or recruit: on or off", ("on", "off")),
            Option("text", "with prompt: the moderator's prompt for this channel, or reset"),
        ),
        verbs=MODERATE_VERBS,
        bare=False,
        needs={"moderate_prompt": MANAGER, "moderate_recruit": MANAGER, "moderate_reasons": MANAGER},
    ),
    Spec("stop", "/stop", "end the running round after the current turn", no_words(StopRound()), {StopRound: run.stop}),
    Spec(
        "next",
        "/next PERSONA",
        "name the persona who speaks next",
        one_word(NameNextSpeaker),
        {NameNextSpeaker: run.name_next},
        options=(Option("persona", "the persona who speaks next", required=True, personas=True),),
    ),
    Spec(
        "persona",
        "/persona list | invite PERSONA_ID | dismiss PERSONA_ID | quiet PERSONA_ID | talk PERSONA_ID",
        "list, invite or dismiss personas here; quiet: one listens and speaks only when named",
        parse_persona,
        {ListPersonas: run.list_personas, Invite: run.membership, Dismiss: run.membership, SetQuiet: run.quiet},
        places=EVERYWHERE,
        options=(
            Option("action", "list, invite, dismiss, quiet or talk", PERSONA_VERBS, True),
            Option("persona_id", "the persona to invite, dismiss, quiet or let talk", personas=True),
        ),
        verbs=PERSONA_VERBS,
        bare=False,
        needs={f"persona_{verb}": MANAGER for verb in PERSONA_VERBS[1:]},
    ),
    Spec(
        "invite",
        "/invite PERSONA_ID",
        "bring a persona into this channel",
        one_word(lambda word: Invite(word.lower())),
        {Invite: run.membership},
        places=TYPED,
        spelling_of="persona",
    ),
    Spec(
        "dismiss",
        "/dismiss PERSONA_ID",
        "send a persona away; it keeps its memory",
        one_word(lambda word: Dismiss(word.lower())),
        {Dismiss: run.membership},
        places=TYPED,
        spelling_of="persona",
    ),
    Spec(
        "personas",
        "/personas",
        "list the personas, marking those in this channel",
        lambda rest: ListPersonas(),
        {ListPersonas: run.list_personas},
        places=TYPED,
        spelling_of="persona",
    ),
    Spec(
        "scene",
        "/scene TEXT (an empty TEXT clears the scene)",
        "set the scene every persona is told",
        lambda rest: SetScene(rest.strip()),
        {SetScene: run.set_scene},
        places=frozenset({"typed", "discord"}),
        options=(Option("text", "the scene every persona is told; leave it out to clear the scene"),),
        needs={"scene": MANAGER},
    ),
    Spec(
        "approvals",
        "/approvals [mode in-command|in-the-loop|on-the-loop | retry N | close N | forget SERVER.TOOL]",
        "list the pending approvals and the tools approved always, set the approval mode, or forget a tool",
        parse_approvals,
        {
            ListApprovals: run.list_approvals,
            SetApprovalMode: run.set_approval_mode,
            SettleUnknown: run.settle,
            ForgetTool: run.forget_tool,
        },
        options=(
            Option(
                "mode",
                "in-command: every action waits; in-the-loop: sensitive ones wait; on-the-loop: none wait",
                APPROVAL_MODES,
                keyword=True,
            ),
            Option(
                "forget", "an MCP tool approved always here, as SERVER.TOOL: it waits for approval again", keyword=True
            ),
        ),
        verbs=("mode", "retry", "close", "forget"),
        needs={"approvals_mode": APPROVER | MANAGER, "approvals_forget": APPROVER},
        doing={"approvals_mode": "change the approval mode", "approvals_forget": "withdraw an Approve always"},
    ),
    Spec("approve", "/approve N", APPROVE_HELP, parse_approve, {Decide: run.decide}, places=TYPED),
    Spec(
        "reject",
        "/reject N [incident] [feedback]",
        "reject action request N, with feedback for the persona",
        parse_reject,
        {Decide: run.decide},
        places=TYPED,
    ),
    Spec(
        "view",
        "/view N",
        "show action request N's full arguments (approvers only)",
        parse_view,
        {ViewArguments: run.view},
        places=TYPED,
    ),
    Spec(
        "revise",
        "/revise N {json}",
        "approve request N with edited arguments: the whole JSON object, as /view N shows it",
        parse_revise,
        {Revise: run.revise},
        places=TYPED,
    ),
    Spec(
        "trust",
        "/trust [all]",
        "show each persona's trust level in this workspace or guild, and what it needs for the next",
        here_or_all(lambda everywhere: ShowTrust(everywhere)),
        {ShowTrust: run.trust},
        options=(Option("scope", "all: every workspace and guild (approvers of every channel)", ("all",)),),
    ),
    Spec(
        "usage",
        "/usage",
        "show this channel's model tokens per persona, today and in 30 days, and each one's 👍 share in 7 days",
        no_words(ShowUsage()),
        {ShowUsage: run.usage},
    ),
    Spec(
        "rate",
        "/rate [N up|down [reason]]",
        "list the personas' newest posts here (1 is the newest), or rate post N 👍 (up) or 👎 (down)",
        parse_rate,
        {Rate: rate},
        places=TYPED,
    ),
    Spec(
        "mailbox",
        "/mailbox",
        "show the personas' private notes here and how many were dropped (approvers only)",
        no_words(ShowMailbox()),
        {ShowMailbox: run.mailbox},
        needs={"mailbox": APPROVER},
        doing={"mailbox": "read the mailbox"},
    ),
    Spec(
        "memory",
        "/memory PERSONA [forget N | clear]",
        "show a persona's summary and notes here; forget one note or clear them (channel managers)",
        parse_memory,
        {MemoryCommand: run.memory},
        options=(Option("text", "a persona, then forget N or clear (channel managers)", required=True),),
        verbs=("forget", "clear"),
        needs={"memory_forget": MANAGER, "memory_clear": MANAGER},
    ),
    Spec(
        "outbox",
        "/outbox [all]",
        "show this channel's posts waiting to go out and those that failed (approvers only)",
        here_or_all(lambda everywhere: ShowOutbox(everywhere)),
        {ShowOutbox: run.outbox},
        options=(Option("scope", "all: every channel (approvers of every channel)", ("all",)),),
        needs={"outbox": APPROVER},
        doing={"outbox": "see the outbox"},
    ),
    Spec(
        "task",
        "/task TEXT | status | result | stop | replan TEXT | pause | resume | takeover [reason] | done N [result]"
        " | cancel [rollback] [reason]",
        "give the team a task step by step; show it or its answer, stop, replan, pause, take over, cancel it",
        parse_task,
        {TaskCommand: run.task},
        options=(
            Option(
                "text",
                "the task; or status, result, stop, replan TEXT, pause, resume, takeover, done N, cancel [rollback]",
                required=True,
            ),
        ),
        verbs=TASK_VERBS,
    ),
    Spec("tools", "/tools", TOOLS_HELP, no_words(ShowTools()), {ShowTools: run.tools}),
    Spec("help", "/help", "list these commands", lambda rest: ShowHelp(), {ShowHelp: run.show_help}, places=TYPED),
    Spec(
        "roundtable",
        "/roundtable help",
        "list these commands",
        parse_roundtable,
        {ShowHelp: run.show_help},
        places=frozenset({"slack", "discord"}),
        options=(Option("action", "help: list the commands", ("help",), True),),
        spelling_of="help",
    ),
)

BY_NAME: dict[str, Spec] = {spec.name: spec for spec in COMMANDS}
USAGE = {spec.name: spec.usage for spec in COMMANDS}
PARSERS: dict[str, Parser] = {spec.name: spec.parse for spec in COMMANDS if "typed" in spec.places}
"""What the console and Slack's @Roundtable text take."""
PERMISSIONS: tuple[str, ...] = tuple(name for spec in COMMANDS for name in spec.permissions())
"""Every name [permissions] may open or close."""
DEFAULT_NEEDS: dict[str, frozenset[Need]] = {name: needs for spec in COMMANDS for name, needs in spec.needs.items()}
DOING: dict[str, str] = {name: doing for spec in COMMANDS for name, doing in spec.doing.items()}


def _handlers() -> dict[type, Handler]:
    found: dict[type, Handler] = {}
    for spec in COMMANDS:
        for kind, handler in spec.handlers.items():
            if found.setdefault(kind, handler) is not handler:
                raise AssertionError(f"{kind.__name__} has two handlers")
    return found


HANDLERS = _handlers()


def parse(spec: Spec, rest: str) -> Command:
    """CommandError (its own line, or the usage) when `rest` does not fit `spec`, whatever `rest` holds."""
    if len(rest) > MAX_COMMAND_CHARS:
        raise CommandError(TOO_LONG)
    try:
        return spec.parse(rest)
    except UsageError as exc:
        raise CommandError(f"usage: {spec.usage}" + (f" {exc.hint}" if exc.hint else "")) from None
    except CommandError:
        raise
    except Exception as exc:  # a parser's own failure must not cost the event: one line, like bad input
        log.warning("/%s could not be read: %s", spec.name, type(exc).__name__)
        raise CommandError(f"/{spec.name} could not be read; nothing was done. usage: {spec.usage}") from None


def parse_command(text: str) -> Command | None:
    """The typed command in text, None when text is not a command, CommandError when it is malformed."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.lower()
    if name not in PARSERS:
        shown = f" /{name}" if name.isprintable() and len(name) <= MAX_NAME_CHARS else ""
        raise CommandError(f"unknown command{shown}; try {', '.join(f'/{n}' for n in PARSERS)}")
    return parse(BY_NAME[name], rest)
