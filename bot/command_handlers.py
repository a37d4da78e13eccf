"""What each command does: one handler per parsed value, named by bot/commands.py.

A handler gets the Call (the service, the channel, the thread, who typed it) and the parsed value,
and returns the answer for whoever typed it; news for everyone goes to the channel through the
service. Who may use a command was checked before (bot/permissions.py), except where it depends on
the channel's state (resuming replies paused after model failures).

Handlers see the service (bot/service.py) only as `CommandService`, the part of it they use: the
service runs the registry, so neither the registry nor its handlers import the service module.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from bot.approval_desk import Actor, ApprovalDesk, CommandReply
from bot.command_values import (
    AllowRecruiting,
    Decide,
    Dismiss,
    ForgetTool,
    Invite,
    ListApprovals,
    ListPersonas,
    MemoryCommand,
    Moderate,
    NameNextSpeaker,
    PauseReplies,
    Revise,
    SetApprovalMode,
    SetModeratorPrompt,
    SetQuiet,
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
    ViewArguments,
)
from bot.mailbox import mailbox_report
from bot.memory import memory_command
from bot.outbox_report import outbox_report
from bot.scoped_views import ONLY_EVERYWHERE
from bot.tasks import TaskDesk
from bot.usage import TokenBook
from bot.votes import Votes
from graph.engine import RoundEngine
from personas import Persona
from storage import channels, history, tool_grants
from storage.database import Database
from storage.records import ApprovalMode

NOBODY = Actor("", "unknown")
FAILURES_PAUSE = "Replies were paused after model failures in a row: only an approver can resume them."
NO_SERVERS = "No MCP servers are configured ([mcp.servers.NAME] in config.toml)."


class ToolReport(Protocol):
    """The configured MCP servers (bot/mcp_servers.py), as /tools reports them."""

    def report(self, personas: Mapping[str, Persona], granted: Collection[str]) -> str: ...


class CommandService(Protocol):
    """What the handlers use of the channel service (bot/service.py's ChannelService)."""

    @property
    def db(self) -> Database: ...
    @property
    def engine(self) -> RoundEngine: ...
    @property
    def personas(self) -> Mapping[str, Persona]: ...
    @property
    def approval_desk(self) -> ApprovalDesk: ...
    @property
    def tasks(self) -> TaskDesk: ...
    @property
    def tokens(self) -> TokenBook | None: ...
    @property
    def votes(self) -> Votes | None: ...
    @property
    def mcp(self) -> ToolReport | None: ...

    def running(self, key: str) -> bool: ...
    def answer_waiting(self, key: str, *, together: bool = False) -> None: ...
    async def notice(self, key: str, text: str, thread: str | None) -> None: ...
    async def mark(self, key: str, marker: str, thread: str | None, *, announce: str) -> None: ...
    def help_text(self, key: str) -> str: ...
    async def approves_everywhere(self, actor: Actor | None) -> bool: ...


@dataclass(frozen=True)
class Call:
    """One command being carried out in one channel."""

    service: CommandService
    key: str
    thread: str | None = None
    actor: Actor | None = None  # None: the operator (start-up, tests), never refused

    @property
    def who(self) -> Actor:
        return self.actor or NOBODY


# -- moderation ------------------------------------------------------------------------------------


async def moderate(call: Call, command: Moderate) -> CommandReply:
    if command.mode == "status":
        return CommandReply(await moderation_status(call, with_decisions=True))
    on = command.mode == "on"
    await channels.set_moderated(call.service.db, call.key, on, command.max_turns)
    status = await moderation_status(call)
    await call.service.mark(call.key, f"moderation {'on' if on else 'off'}", call.thread, announce=status)
    return CommandReply(status, announced=True)


async def pause_replies(call: Call, command: PauseReplies) -> CommandReply:
    service, key = call.service, call.key
    channel = await channels.get_channel(service.db, key)
    if not command.pause:
        if channel is None or not channel.paused:
            return CommandReply("Replies are not paused here; nothing to resume.", ok=False)
        if (root := await channels.root_key(service.db, key)) != key and (
            (parent := await channels.get_channel(service.db, root)) is not None and parent.paused
        ):
            return CommandReply("The channel this thread is in is paused: /moderate resume there.", ok=False)
        if channel.paused_after_failures and not (
            call.actor is None or service.approval_desk.may_decide(key, call.who)
        ):
            return CommandReply(FAILURES_PAUSE, ok=False)
    await channels.set_setting(service.db, key, "paused", command.pause)
    if command.pause:
        announce = "Replies are paused: messages are kept, and no persona answers until /moderate resume."
    else:
        announce = "Replies resumed: what came in meanwhile is answered now, in one round."
        await service.tasks.resume_all(key)  # a task that waited for the pause goes first
        for waiting in [key, *await channels.threads_waiting(service.db, key)]:  # its threads were paused too
            service.answer_waiting(waiting, together=True)
    await service.mark(key, "replies paused" if command.pause else "replies resumed", call.thread, announce=announce)
    return CommandReply(announce, announced=True)


async def show_reasons(call: Call, command: ShowReasons) -> CommandReply:
    await channels.set_setting(call.service.db, call.key, "show_reasons", command.on)
    return CommandReply(f"The moderator's picks and reasons are {'shown' if command.on else 'no longer shown'} here.")


async def allow_recruiting(call: Call, command: AllowRecruiting) -> CommandReply:
    await channels.set_setting(call.service.db, call.key, "recruit", command.on)
    return CommandReply(f"The moderator {'may' if command.on else 'may not'} invite personas into this channel.")


async def set_moderator_prompt(call: Call, command: SetModeratorPrompt) -> CommandReply:
    await channels.set_setting(call.service.db, call.key, "moderator_prompt", command.text)
    if command.text:
        return CommandReply("The moderator uses this channel's own prompt now.")
    return CommandReply("The moderator uses the default prompt again.")


async def moderation_status(call: Call, *, with_decisions: bool = False) -> str:
    channel = await channels.get_channel(call.service.db, call.key)
    assert channel is not None
    if not channel.moderated:
        status = "Moderation is off: addressed personas reply, otherwise a natural pick, once."
    else:
        turns = channel.max_turns or call.service.engine.deps.settings.max_turns
        status = f"Moderation is on: the moderator picks who speaks next, up to {turns} turns a round."
    if channel.paused_after_failures:
        status += " Replies are paused after model failures in a row (an approver resumes: /moderate resume)."
    elif channel.paused:
        status += " Replies are paused (/moderate resume)."
    if with_decisions and channel.last_decisions:
        status += "\nThe last round's decisions:\n" + "\n".join(f"- {d}" for d in channel.last_decisions)
    return status


async def stop(call: Call, command: StopRound) -> CommandReply:
    if not call.service.running(call.key):
        return CommandReply("No round is running here.", ok=False)
    await channels.set_setting(call.service.db, call.key, "stop_requested", True)
    return CommandReply("The round stops after the current turn; pending approvals stay pending.")


async def name_next(call: Call, command: NameNextSpeaker) -> CommandReply:
    service = call.service
    present = [service.personas[p] for p in await channels.participants(service.db, call.key) if p in service.personas]
    wanted = command.persona.strip().lstrip("@").casefold()
    persona = next((p for p in present if wanted in (p.id.casefold(), p.display_name.casefold())), None)
    if persona is None:
        names = ", ".join(p.display_name for p in present) or "nobody"
        return CommandReply(f"{command.persona[:40]!r} is not in this channel; choose one of {names}.", ok=False)
    await channels.set_setting(service.db, call.key, "next_speaker", persona.id)
    when = "next in this round" if service.running(call.key) else "first in the next round"
    return CommandReply(f"{persona.display_name} speaks {when}.")


# -- who is here, and the scene --------------------------------------------------------------------


async def membership(call: Call, command: Invite | Dismiss) -> CommandReply:
    service, join = call.service, isinstance(command, Invite)
    persona = service.personas.get(command.persona_id)
    if persona is None:
        return CommandReply(f"No persona {command.persona_id!r}; known: {', '.join(service.personas)}", ok=False)
    text = f"{persona.display_name} {'joined' if join else 'left'}"
    changed = await history.set_membership(service.db, call.key, persona.id, active=join, marker_text=text)
    if not changed:
        state = "already here" if join else "not in this channel"
        return CommandReply(f"{persona.display_name} is {state}.", ok=False)
    await service.notice(call.key, f"{text}.", call.thread)
    return CommandReply(f"{text}.", announced=True)


async def quiet(call: Call, command: SetQuiet) -> CommandReply:
    service = call.service
    persona = service.personas.get(command.persona_id)
    if persona is None or not await channels.set_quiet(service.db, call.key, persona.id, command.quiet):
        return CommandReply(f"No change: {command.persona_id[:40]!r} is not here, or is so already.", ok=False)
    news = f"{persona.display_name} {'listens only here, and speaks when named' if command.quiet else 'talks again'}."
    await service.notice(call.key, news, call.thread)
    return CommandReply(news, announced=True)


async def list_personas(call: Call, command: ListPersonas) -> CommandReply:
    present = set(await channels.participants(call.service.db, call.key))
    rows = [
        f"{'*' if p.id in present else ' '} {p.id}: {p.display_name} (talkativeness {p.talkativeness:.1f})"
        for p in call.service.personas.values()
    ]
    return CommandReply("Personas (* = in this channel):\n" + "\n".join(rows))


async def set_scene(call: Call, command: SetScene) -> CommandReply:
    text = command.text
    await channels.set_scene(call.service.db, call.key, text)
    announce = f"Scene set: {text}" if text else "Scene cleared."
    await call.service.mark(call.key, f"scene: {text}" if text else "scene cleared", call.thread, announce=announce)
    return CommandReply(announce, announced=True)


# -- approvals, trust, the mailbox, the outbox, tasks, help ----------------------------------------


async def list_approvals(call: Call, command: ListApprovals) -> CommandReply:
    return CommandReply(await call.service.approval_desk.pending_list(call.key))


async def forget_tool(call: Call, command: ForgetTool) -> CommandReply:
    reply = await call.service.approval_desk.forget_tool(call.key, command.tool, call.who)
    if reply.ok:
        await call.service.notice(call.key, reply.reply, call.thread)
    return replace(reply, announced=reply.ok)


async def tools(call: Call, command: ShowTools) -> CommandReply:
    """The MCP servers, and the tools this channel's personas may use on each."""
    service = call.service
    if service.mcp is None:
        return CommandReply(NO_SERVERS)
    here = [service.personas[p] for p in await channels.participants(service.db, call.key) if p in service.personas]
    granted = [grant.tool for grant in await tool_grants.grants(service.db, call.key)]
    return CommandReply(service.mcp.report({p.id: p for p in here}, granted))


async def set_approval_mode(call: Call, command: SetApprovalMode) -> CommandReply:
    await channels.set_approval_mode(call.service.db, call.key, ApprovalMode(command.mode))
    applied = await channels.get_channel(call.service.db, call.key)
    announce = f"Approval mode is now {command.mode}."
    if applied is not None and applied.approval_mode != command.mode:  # a thread under a stricter channel
        announce = (
            f"Approval mode here is {command.mode}, but this thread's channel is {applied.approval_mode}, "
            "and the stricter one applies."
        )
    await call.service.mark(call.key, f"approval mode {command.mode}", call.thread, announce=announce)
    return CommandReply(announce, announced=True)


async def settle(call: Call, command: SettleUnknown) -> CommandReply:
    return await call.service.approval_desk.settle_unknown(
        command.approval_id, call.who, command.retry, typed_in=call.key
    )


async def decide(call: Call, command: Decide) -> CommandReply:
    desk = call.service.approval_desk
    return await desk.decide(
        command.approval_id,
        call.who,
        command.approve,
        command.comment,
        command.incident,
        always=command.always,
        typed_in=call.key,
    )


async def view(call: Call, command: ViewArguments) -> CommandReply:
    return await call.service.approval_desk.show_arguments(command.approval_id, call.who, typed_in=call.key)


async def revise(call: Call, command: Revise) -> CommandReply:
    return await call.service.approval_desk.revise(command.approval_id, call.who, command.args, typed_in=call.key)


async def trust(call: Call, command: ShowTrust) -> CommandReply:
    """Trust in this channel's workspace or guild; with "all", everywhere, for approvers of every channel."""
    if command.everywhere and not await call.service.approves_everywhere(call.actor):
        return CommandReply(ONLY_EVERYWHERE.format(command="/trust all"), ok=False)
    desk = call.service.approval_desk
    return CommandReply(await desk.trust_table(None if command.everywhere else call.key))


async def memory(call: Call, command: MemoryCommand) -> CommandReply:
    service = call.service
    answer = await memory_command(
        service.db,
        call.key,
        service.personas,
        await channels.participants(service.db, call.key),
        service.engine.deps.settings.memory.share_notes,
        persona_id=command.persona_id,
        verb=command.verb,
        number=command.number,
        actor=call.who.name or "the operator",
    )
    if answer.announce:
        await service.notice(call.key, answer.announce, call.thread)
    return CommandReply(answer.text, ok=answer.ok, announced=bool(answer.announce))


async def mailbox(call: Call, command: ShowMailbox) -> CommandReply:
    return CommandReply(await mailbox_report(call.service.db, call.key, call.service.personas))


async def outbox(call: Call, command: ShowOutbox) -> CommandReply:
    """This channel's waiting and failed posts; with "all", every channel's, for approvers of every channel."""
    if command.everywhere and not await call.service.approves_everywhere(call.actor):
        return CommandReply(ONLY_EVERYWHERE.format(command="/outbox all"), ok=False)
    return CommandReply(await outbox_report(call.service.db, None if command.everywhere else call.key))


async def usage(call: Call, command: ShowUsage) -> CommandReply:
    """Model tokens in this channel, today and in the last 30 days, per persona and the moderator (bot/usage.py);
    each persona's share of 👍 here over 7 days (bot/votes.py)."""
    if call.service.tokens is None:
        return CommandReply("Token usage is not recorded here.", ok=False)
    report = await call.service.tokens.report(call.key, call.service.personas)
    votes = await call.service.votes.report(call.key) if call.service.votes is not None else ""
    return CommandReply(f"{report}\n{votes}" if votes else report)


async def task(call: Call, command: TaskCommand) -> CommandReply:
    reply, ok = await call.service.tasks.command(call.key, command, call.thread, call.who)
    if ok and command.verb == "result":  # the answer is posted again, for everyone
        await call.service.notice(call.key, reply, call.thread)
        return CommandReply(reply, announced=True)
    return CommandReply(reply, ok=ok)


async def show_help(call: Call, command: ShowHelp) -> CommandReply:
    return CommandReply(call.service.help_text(call.key))
