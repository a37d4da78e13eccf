"""The channel service: dedupe, one queue per channel, and commands.

Rounds in one channel run strictly one at a time, in the order their messages were recorded;
different channels run concurrently. A message is recorded in the inbox before anything else
happens to it, and a channel's worker answers the inbox oldest first while it holds the channel's
lock, so processes sharing one database take turns and still answer in order. Commands take
effect at once, so `/moderate off` can stop a running round.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

from bot.approval_desk import (
    Actor,
    ApprovalDesk,
    CommandReply,
    IsApprover,
    ResumeApprovals,
    RunApproved,
    nobody,
)
from bot.approvals import (
    unknown_outcome_notice,
)
from bot.commands import (
    AllowRecruiting,
    Command,
    CommandError,
    Decide,
    Dismiss,
    Invite,
    ListApprovals,
    ListPersonas,
    Moderate,
    NameNextSpeaker,
    PauseReplies,
    Revise,
    SetApprovalMode,
    SetModeratorPrompt,
    SetScene,
    SettleUnknown,
    ShowHelp,
    ShowMailbox,
    ShowReasons,
    ShowTrust,
    StopRound,
    Surface,
    TaskCommand,
    ViewArguments,
    help_text,
    parse_command,
)
from bot.flood import FloodGate
from bot.inbound import Inbound
from bot.mailbox import REFUSED as MAILBOX_REFUSED
from bot.mailbox import mailbox_report
from bot.pacing import RoundStarts
from bot.tasks import RunTask, TaskDesk
from graph.engine import RoundEngine
from graph.port import OutboundPort
from personas import Persona
from storage import approvals, channels, history, inbox
from storage.database import Database
from storage.locks import channel_lock
from storage.records import ApprovalMode, ApprovalStatus, LineKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChannelDefaults:
    participants: Sequence[str]
    moderated: bool = False


@dataclass(frozen=True)
class AnswerInbox:
    """A queued item: answer whatever waits in the channel's inbox, one round per message, or,
    after /moderate resume, everything that came in meanwhile in one round."""

    channel_key: str
    together: bool = False


WorkItem = AnswerInbox | ResumeApprovals | RunApproved | RunTask


def surface_of(channel_key: str) -> Surface:
    platform = channel_key.split(":", 1)[0]
    return "slack" if platform == "slack" else "discord" if platform == "discord" else "console"


class ChannelService:
    def __init__(
        self,
        *,
        db: Database,
        engine: RoundEngine,
        personas: Mapping[str, Persona],
        port: OutboundPort,
        defaults: ChannelDefaults,
        is_approver: IsApprover = nobody,
        approvals_surface: str = "same",
        flood: FloodGate,
        auto_detect_tasks: bool = False,
    ) -> None:
        self.db = db
        self.engine = engine
        self.personas = personas
        self.port = port
        self.defaults = defaults
        self.flood = flood
        self._queues: dict[str, asyncio.Queue[WorkItem]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._draining = False
        self._known_channels: set[str] = set()
        self._arrivals: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # lock, [holders and waiters]
        self.tasks = TaskDesk(db, engine, self._enqueue, auto_detect=auto_detect_tasks)
        self.approval_desk = ApprovalDesk(
            db,
            engine,
            personas,
            is_approver=is_approver,
            surface=approvals_surface,
            enqueue=self._enqueue,
            wait_idle=self.wait_idle,
        )
        self._starts = RoundStarts()  # a burst of rounds must not stall the loop (and the acks) at once

    async def handle(self, inbound: Inbound) -> CommandReply | None:
        """Take one inbound message: run it as a command, or record it and queue its round. The reply, if
        any, goes to the message's author alone: a command's answer, or a flood limit's notice."""
        try:
            command = parse_command(inbound.text)
        except CommandError as exc:
            await self._ensure_channel(inbound.channel_key)
            return CommandReply(str(exc), ok=False)
        actor = Actor(inbound.author_id, inbound.author_name, inbound.author_team)
        if command is not None:
            return await self.run_command(inbound.channel_key, command, thread=inbound.thread, actor=actor)
        # Past a flood limit the line is still stored and delivered, but queues no round.
        admission = self.flood.admit(
            inbound.channel_key,
            inbound.author_id,
            time.monotonic(),
            exempt=self.approval_desk.may_decide(inbound.channel_key, actor),
        )
        line = await inbox.accept(
            self.db,
            inbound.event_id,
            inbound.channel_key,
            inbound.author_id,
            inbound.author_name,
            inbound.text,
            mentions=inbound.mentions,
            thread=inbound.thread,
            queue=admission.starts_round,
            new_channel=self._new_channel(inbound.channel_key),  # one commit on the way to the ack
        )
        if line is None:
            self.flood.withdraw(admission)
            log.info("duplicate event %s ignored", inbound.event_id)
            return None
        self._known_channels.add(inbound.channel_key)
        if admission.starts_round:
            self._enqueue(AnswerInbox(inbound.channel_key))
        return CommandReply(admission.notice, ok=False) if admission.notice else None

    @asynccontextmanager
    async def in_arrival_order(self, channel_key: str) -> AsyncIterator[None]:
        """Hold a channel's place in line: blocks entered in call order run one at a time.

        An adapter enters it as soon as an event arrives, before any await (a name lookup, say),
        and records the message inside it; so each channel records its lines in the order they
        arrived. asyncio.Lock wakes its waiters first in, first out."""
        lock, users = self._arrivals.setdefault(channel_key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._arrivals[channel_key]

    async def resume_waiting(self) -> None:
        """At start-up: finish what a stop interrupted. Approved actions that never ran are run;
        a run that started and was never confirmed is reported to the approvers, not run again;
        messages recorded before the stop whose rounds never ran are answered."""
        runner = self.engine.runner.runner_id
        await self.db.claim(f"runner:{runner}")  # held while this process lives: its claims are alive
        for approval in await approvals.with_status(self.db, ApprovalStatus.RUNNING):
            owner = approval.runner or ""
            if owner != runner and await self.db.claim(f"runner:{owner}"):  # its process is gone
                if await approvals.mark_unknown(self.db, approval.id, owner) is not None:
                    await self._tell_approvers(approval.channel_key, unknown_outcome_notice(approval))
        batches: dict[str, str] = {}
        for status in (ApprovalStatus.APPROVED, ApprovalStatus.UNKNOWN):
            for approval in await approvals.with_status(self.db, status):
                batches.setdefault(approval.batch, approval.channel_key)
        for batch, key in batches.items():
            if not any(a.status is ApprovalStatus.PENDING for a in await approvals.in_batch(self.db, batch)):
                self._enqueue(ResumeApprovals(key, batch))  # a finished flow resumes as a no-op
        await self.tasks.resume_all()  # before the channels' waiting messages, as they came first
        for key in await inbox.channels_waiting(self.db):
            self._enqueue(AnswerInbox(key))

    async def _tell_approvers(self, key: str, text: str) -> None:
        try:
            await self.port.notify_approvers(key, text)
        except Exception:
            log.exception("could not notify the approvers of %s", key)

    async def _ensure_channel(self, key: str) -> None:
        if key in self._known_channels:  # channels are never deleted: no read on a message's way to its ack
            return
        await channels.ensure_channel(
            self.db, key, participants=self.defaults.participants, moderated=self.defaults.moderated
        )
        self._known_channels.add(key)

    def _new_channel(self, key: str) -> inbox.NewChannel | None:
        """How a channel this process has not seen yet starts, should it not be stored either."""
        return None if key in self._known_channels else (self.defaults.participants, self.defaults.moderated)

    def _enqueue(self, item: WorkItem) -> None:
        key = item.channel_key
        self._queues.setdefault(key, asyncio.Queue()).put_nowait(item)
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(self._drain(key), name=f"rounds:{key}")

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        try:
            while not queue.empty() and not self._draining:
                item = queue.get_nowait()
                await self._starts.turn()
                try:
                    async with self.db.exclusive(channel_lock(key)):
                        await self._work(item)
                except Exception:
                    log.exception("queued work failed in %s", key)
                    await self._notice(key, "Something went wrong in this channel; nothing was lost.", None)
        finally:
            # No await between the empty check and this: a message queued now starts a new worker.
            del self._workers[key]
            if queue.empty():
                del self._queues[key]

    async def _work(self, item: WorkItem) -> None:
        if isinstance(item, ResumeApprovals):
            await self.engine.resume_approvals(item.batch)
            return
        if isinstance(item, RunApproved):
            await self.engine.run_approved(item.approval_id)
            return
        if isinstance(item, RunTask):
            await self.engine.tasks.run(item.task_id)
            return
        while (message := await inbox.oldest(self.db, item.channel_key)) is not None:
            channel = await channels.get_channel(self.db, item.channel_key)
            if channel is not None and channel.paused:
                return  # recorded, and answered after /moderate resume
            if item.together:
                message = await self._take_all_waiting(message)
            # Taken off before the round runs: a round cut short by a crash is not run again,
            # so no reply or action request is ever repeated. Messages still waiting are answered.
            await inbox.take(self.db, message.line_id)
            try:
                await self._answer(message)
            except asyncio.CancelledError:
                # Stopped mid-round: a round that had said nothing yet is answered at the next start.
                await asyncio.shield(inbox.give_back_if_unanswered(self.db, message))
                raise
            except Exception:
                log.exception("round failed in %s", item.channel_key)
                await self._notice(
                    item.channel_key, "Something went wrong in this round; the message was kept.", message.thread
                )

    async def _take_all_waiting(self, oldest: inbox.Waiting) -> inbox.Waiting:
        """Every waiting message off the inbox but the newest, which the one round then answers,
        addressing everyone any of them addressed."""
        newest, mentions, texts = oldest, list(oldest.mentions), [oldest.text]
        while (following := await inbox.oldest_after(self.db, newest.channel_key, newest.line_id)) is not None:
            await inbox.take(self.db, newest.line_id)
            newest = following
            mentions += [m for m in following.mentions if m not in mentions]
            texts.append(following.text)
        return replace(newest, text="\n".join(texts), mentions=tuple(mentions))

    async def _answer(self, message: inbox.Waiting) -> None:
        async with self.port.answering(message.channel_key, message.event_id):
            if await self.tasks.start_if_task(message.channel_key, message.thread, message.text, message.author_name):
                return  # answered by a task (the coordinator read the line as one)
            waiting = await self.engine.run_round(
                message.channel_key,
                text=message.text,
                author_name=message.author_name,
                mentions=list(message.mentions),
                thread=message.thread,
            )
        await self.engine.start_approvals(waiting)

    async def _notice(self, key: str, text: str, thread: str | None) -> None:
        try:
            await self.port.notice(key, text, thread)
        except Exception:
            log.exception("could not post a notice in %s", key)

    async def drain(self, grace_seconds: float) -> None:
        """A graceful stop: take no more queued work, let running work finish within the grace
        period, then cancel it. What was queued is durable and picked up at the next start."""
        self._draining = True
        running = list(self._workers.values())
        if not running:
            return
        _, late = await asyncio.wait(running, timeout=grace_seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        if late:
            log.warning("stopped %d channel(s) after the %.0f s grace period", len(late), grace_seconds)

    async def wait_idle(self, channel_key: str | None = None) -> None:
        """Until the channel's queued rounds (or every channel's) have run."""
        while True:
            tasks = [t for k, t in self._workers.items() if channel_key in (None, k)]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- commands ------------------------------------------------------------------------------

    async def run_command(
        self, key: str, command: Command, *, thread: str | None = None, actor: Actor | None = None
    ) -> CommandReply:
        await self._ensure_channel(key)
        match command:
            case Decide(approval_id=approval_id, approve=approve, comment=comment, incident=incident):
                return await self.approval_desk.decide(
                    approval_id, actor or Actor("", "unknown"), approve, comment, incident
                )
            case ListApprovals():
                return CommandReply(await self.approval_desk.pending_list(key))
            case ViewArguments(approval_id=approval_id):
                return await self.approval_desk.show_arguments(
                    approval_id, actor or Actor("", "unknown"), decided_in=key
                )
            case Revise(approval_id=approval_id, args=args):
                return await self.approval_desk.revise(approval_id, actor or Actor("", "unknown"), args, decided_in=key)
            case SettleUnknown(approval_id=approval_id, retry=retry):
                return await self.approval_desk.settle_unknown(approval_id, actor or Actor("", "unknown"), retry)
            case SetApprovalMode(mode=mode):
                if actor is None or not self.approval_desk.may_decide(key, actor):
                    return CommandReply("Only approvers can change the approval mode.", ok=False)
                await channels.set_approval_mode(self.db, key, ApprovalMode(mode))
                announce = f"Approval mode is now {mode}."
                await self._mark(key, f"approval mode {mode}", thread, announce=announce)
                return CommandReply(announce, announced=True)
            case ShowTrust():
                return CommandReply(await self.approval_desk.trust_table())
            case ShowMailbox():
                if actor is None or not self.approval_desk.may_decide(key, actor):
                    return CommandReply(MAILBOX_REFUSED, ok=False)
                return CommandReply(await mailbox_report(self.db, key, self.personas))
            case ShowHelp():
                return CommandReply(help_text(surface_of(key)))
            case TaskCommand():
                who = actor or Actor("", "unknown")
                reply, ok = await self.tasks.command(key, command, thread, who.id, who.name)
                return CommandReply(reply, ok=ok)
            case Moderate(mode="status"):
                return CommandReply(await self._moderation_status(key, with_decisions=True))
            case PauseReplies(pause=pause):
                if not pause and not await self._may_resume(key, actor):
                    return CommandReply(
                        "Replies were paused after model failures in a row: only an approver can resume them.",
                        ok=False,
                    )
                await channels.set_setting(self.db, key, "paused", pause)
                if pause:
                    announce = "Replies are paused: messages are kept, and no persona answers until /moderate resume."
                else:
                    announce = "Replies resumed: what came in meanwhile is answered now, in one round."
                    await self.tasks.resume_all(key)  # a task that waited for the pause goes first
                    self._enqueue(AnswerInbox(key, together=True))
                await self._mark(key, "replies paused" if pause else "replies resumed", thread, announce=announce)
                return CommandReply(announce, announced=True)
            case ShowReasons(on=on):
                await channels.set_setting(self.db, key, "show_reasons", on)
                return CommandReply(
                    f"The moderator's picks and reasons are {'shown' if on else 'no longer shown'} here."
                )
            case AllowRecruiting(on=on):
                await channels.set_setting(self.db, key, "recruit", on)
                return CommandReply(f"The moderator {'may' if on else 'may not'} invite personas into this channel.")
            case SetModeratorPrompt(text=text):
                await channels.set_setting(self.db, key, "moderator_prompt", text)
                return CommandReply(
                    "The moderator uses this channel's own prompt now."
                    if text
                    else "The moderator uses the default prompt again."
                )
            case StopRound():
                if key not in self._workers:
                    return CommandReply("No round is running here.", ok=False)
                await channels.set_setting(self.db, key, "stop_requested", True)
                return CommandReply("The round stops after the current turn; pending approvals stay pending.")
            case NameNextSpeaker(persona=name):
                return await self._name_next(key, name)
            case Moderate(mode=mode, max_turns=max_turns):
                on = mode == "on"
                await channels.set_moderated(self.db, key, on, max_turns)
                status = await self._moderation_status(key)
                await self._mark(key, f"moderation {'on' if on else 'off'}", thread, announce=status)
                return CommandReply(status, announced=True)
            case Invite(persona_id=persona_id) | Dismiss(persona_id=persona_id):
                return await self._membership(key, persona_id, isinstance(command, Invite), thread)
            case ListPersonas():
                return CommandReply(await self._persona_list(key))
            case SetScene(text=text):
                await channels.set_scene(self.db, key, text)
                announce = f"Scene set: {text}" if text else "Scene cleared."
                await self._mark(key, f"scene: {text}" if text else "scene cleared", thread, announce=announce)
                return CommandReply(announce, announced=True)
        raise AssertionError(f"unhandled command {command!r}")

    async def _may_resume(self, key: str, actor: Actor | None) -> bool:
        """Anyone may resume a /moderate pause; a pause after model failures waits for an approver."""
        channel = await channels.get_channel(self.db, key)
        paused_by_failures = channel is not None and channel.paused_after_failures
        return not paused_by_failures or (actor is not None and self.approval_desk.may_decide(key, actor))

    async def _mark(self, key: str, marker: str, thread: str | None, *, announce: str) -> None:
        await history.append_line(self.db, key, LineKind.MARKER, "system", "system", marker)
        await self._notice(key, announce, thread)

    async def _moderation_status(self, key: str, *, with_decisions: bool = False) -> str:
        channel = await channels.get_channel(self.db, key)
        assert channel is not None
        if not channel.moderated:
            status = "Moderation is off: addressed personas reply, otherwise a natural pick, once."
        else:
            turns = channel.max_turns or self.engine.deps.settings.max_turns
            status = f"Moderation is on: the moderator picks who speaks next, up to {turns} turns a round."
        if channel.paused_after_failures:
            status += " Replies are paused after model failures in a row (an approver resumes: /moderate resume)."
        elif channel.paused:
            status += " Replies are paused (/moderate resume)."
        if with_decisions and channel.last_decisions:
            status += "\nThe last round's decisions:\n" + "\n".join(f"- {d}" for d in channel.last_decisions)
        return status

    async def _name_next(self, key: str, name: str) -> CommandReply:
        present = [self.personas[p] for p in await channels.participants(self.db, key) if p in self.personas]
        wanted = name.strip().lstrip("@").casefold()
        persona = next((p for p in present if wanted in (p.id.casefold(), p.display_name.casefold())), None)
        if persona is None:
            names = ", ".join(p.display_name for p in present) or "nobody"
            return CommandReply(f"{name[:40]!r} is not in this channel; choose one of {names}.", ok=False)
        await channels.set_setting(self.db, key, "next_speaker", persona.id)
        when = "next in this round" if key in self._workers else "first in the next round"
        return CommandReply(f"{persona.display_name} speaks {when}.")

    async def _membership(self, key: str, persona_id: str, join: bool, thread: str | None) -> CommandReply:
        persona = self.personas.get(persona_id)
        if persona is None:
            return CommandReply(f"No persona {persona_id!r}; known: {', '.join(self.personas)}", ok=False)
        text = f"{persona.display_name} {'joined' if join else 'left'}"
        changed = await history.set_membership(self.db, key, persona_id, active=join, marker_text=text)
        if not changed:
            state = "already here" if join else "not in this channel"
            return CommandReply(f"{persona.display_name} is {state}.", ok=False)
        await self._notice(key, f"{text}.", thread)
        return CommandReply(f"{text}.", announced=True)

    async def _persona_list(self, key: str) -> str:
        present = set(await channels.participants(self.db, key))
        rows = [
            f"{'*' if p.id in present else ' '} {p.id}: {p.display_name} (talkativeness {p.talkativeness:.1f})"
            for p in self.personas.values()
        ]
        return "Personas (* = in this channel):\n" + "\n".join(rows)

    def _persona_name(self, persona_id: str) -> str:
        persona = self.personas.get(persona_id)
        return persona.display_name if persona else persona_id
