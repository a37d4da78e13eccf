"""The channel service: the inbound gate, one queue per channel, and commands.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from bot.approval_desk import Actor, ApprovalDesk, CommandReply, IsApprover, ResumeApprovals, RunApproved, nobody
from bot.command_handlers import Call
from bot.command_help import help_text
from bot.command_values import Command, CommandError
from bot.commands import HANDLERS, Surface, parse_command
from bot.flood import FloodGate, starts_model_work
from bot.inbound import Inbound
from bot.mcp_servers import McpServers
from bot.pacing import RoundStarts
from bot.permissions import Permissions
from bot.tasks import RunTask, TaskDesk
from bot.usage import TokenBook, budget_notice, budget_refusal
from bot.votes import Votes
from graph.engine import RoundEngine
from graph.observe import MESSAGES, working_in
from graph.port import OutboundPort
from personas import Persona
from storage import channels, history, inbox, rounds
from storage.channels import Place
from storage.database import Database
from storage.locks import channel_lock
from storage.records import LineKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChannelDefaults:
    participants: Sequence[str]
    moderated: bool = False
    session_gap_hours: float = 6  # silence after which a line opens a new session (0: never)


@dataclass(frozen=True)
class AnswerInbox:
    """A queued item: answer whatever waits in the channel's inbox, one round per message, or,
    after /moderate resume, everything that came in meanwhile in one round."""

    channel_key: str
    together: bool = False


WorkItem = AnswerInbox | ResumeApprovals | RunApproved | RunTask


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
        permissions: Permissions | None = None,
        tokens: TokenBook | None = None,
        votes: Votes | None = None,
        mcp: McpServers | None = None,
        settled: Callable[[], Awaitable[None]] | None = None,
        approvals_channel: Callable[[str], bool] = lambda key: False,
        max_rounds_at_once: int = 200,
    ) -> None:
        self.db = db
        self.tokens = tokens
        self.votes = votes  # people's 👍 and 👎 (bot/votes.py): /rate, /usage
        self.mcp = mcp  # the configured MCP servers, for /tools; None when there are none
        self.engine = engine
        self.personas = personas
        self.port = port
        self.defaults = defaults
        self.flood = flood
        self.permissions = permissions or Permissions()
        self._settled = settled  # until what was posted is sent (the outbox), or waits for a retry
        self._queues: dict[str, asyncio.Queue[WorkItem]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._draining = False
        self._known_channels: set[str] = set()
        self._arrivals: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # lock, [holders and waiters]
        self.approval_desk = ApprovalDesk(
            db,
            engine,
            personas,
            is_approver=is_approver,
            surface=approvals_surface,
            enqueue=self.enqueue,
            wait_idle=self.wait_idle,
            approvals_channel=approvals_channel,
        )
        self.tasks = TaskDesk(
            db,
            engine,
            self.enqueue,
            auto_detect=auto_detect_tasks,
            may_decide=self.approval_desk.may_decide,
            withdraw=self.approval_desk.withdraw,
        )
        self._starts = RoundStarts()  # a burst of rounds must not stall the loop (and the acks) at once
        # How many channels run at once ([storage] max_rounds_at_once), whatever the database's pool.
        self._running = asyncio.Semaphore(max_rounds_at_once)

    async def handle(self, inbound: Inbound) -> CommandReply | None:
        """Take one inbound message: run it as a command, or record it and queue its round. The reply, if
        any, goes to the message's author alone: a command's answer, or a flood limit's notice."""
        place = Place(inbound.tenant, inbound.parent_key, inbound.private) if inbound.tenant else None
        self.approval_desk.note_parent(inbound.channel_key, inbound.parent_key)
        # A thread's flood windows and budget are its channel's (storage/threads.py).
        root = inbound.parent_key or inbound.channel_key
        try:
            command = parse_command(inbound.text)
        except CommandError as exc:
            await self._ensure_channel(inbound.channel_key, place)
            return CommandReply(str(exc), ok=False)
        actor = Actor(inbound.author_id, inbound.author_name, inbound.author_team, inbound.author_manages)
        if command is not None:
            return await self.run_command(inbound.channel_key, command, thread=inbound.thread, actor=actor, place=place)
        # Past a flood limit the line is still stored and delivered, but queues no round.
        admission = self.flood.admit(
            root,
            inbound.author_id,
            time.monotonic(),
            exempt=self.approval_desk.may_decide(inbound.channel_key, actor),
        )
        # Past the channel's daily token budget, likewise: stored, no round until the next UTC day.
        spent = admission.starts_round and self.tokens is not None and await self.tokens.spent(root)
        line = await inbox.accept(
            self.db,
            inbound.event_id,
            inbound.channel_key,
            inbound.author_id,
            inbound.author_name,
            inbound.text,
            mentions=inbound.mentions,
            thread=inbound.thread,
            queue=admission.starts_round and not spent,
            new_channel=self._new_channel(inbound.channel_key, place),  # one commit on the way to the ack
            session_gap_seconds=self.defaults.session_gap_hours * 3600,
        )
        if line is None:
            self.flood.withdraw(admission)
            log.info("duplicate event %s ignored", inbound.event_id)
            return None
        MESSAGES.labels(self.surface_of(inbound.channel_key)).inc()
        self._known_channels.add(inbound.channel_key)
        if spent and self.tokens is not None and self.tokens.first_refusal_today(root):
            notice = budget_notice(self.tokens.tokens_per_day)
            await self.notice(inbound.channel_key, notice, inbound.thread)
            await self.tell_approvers(inbound.channel_key, notice)
        elif admission.starts_round and not spent:
            self.enqueue(AnswerInbox(inbound.channel_key))
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

    async def _ensure_channel(self, key: str, place: Place | None = None) -> None:
        if key in self._known_channels:  # channels are never deleted: no read on a message's way to its ack
            return
        await channels.ensure_channel(
            self.db, key, participants=self.defaults.participants, moderated=self.defaults.moderated, place=place
        )
        if place is not None:  # else its place is recorded with its next message
            self._known_channels.add(key)

    def _new_channel(self, key: str, place: Place | None = None) -> inbox.NewChannel | None:
        """How a channel this process has not seen yet starts, should it not be stored either, and
        where it sits (recorded on a stored channel that has no place yet)."""
        if key in self._known_channels:
            return None
        return (self.defaults.participants, self.defaults.moderated, place)

    def enqueue(self, item: WorkItem) -> None:
        key = item.channel_key
        self._queues.setdefault(key, asyncio.Queue()).put_nowait(item)
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(self._drain(key), name=f"rounds:{key}")

    async def _drain(self, key: str) -> None:
        working_in.set(key)  # this task's model calls count against the channel (graph/observe.py)
        queue = self._queues[key]
        try:
            while not queue.empty() and not self._draining:
                item = queue.get_nowait()
                await self._starts.turn()
                try:
                    async with self._running, self.db.exclusive(channel_lock(key)):
                        await self._work(item)
                except Exception:
                    log.exception("queued work failed in %s", key)
                    await self.notice(key, "Something went wrong in this channel; nothing was lost.", None)
        finally:
            # No await between the empty check and this: a message queued now starts a new worker.
            del self._workers[key]
            if queue.empty():
                del self._queues[key]

    async def _work(self, item: WorkItem) -> None:
        if isinstance(item, ResumeApprovals | RunApproved):
            if isinstance(item, ResumeApprovals):
                await self.engine.resume_approvals(item.batch)
            else:
                await self.engine.run_approved(item.approval_id)
            await self.tasks.resume_all(item.channel_key)  # a step waiting for that approval goes on
            return
        if isinstance(item, RunTask):
            await self.engine.tasks.run(item.task_id)
            await self.tasks.after_run(item.task_id)
            return
        while True:
            # A round cut short by a crash or a stop goes first: it goes on from its last committed
            # turn (storage.rounds), here or in another process. Then the inbox, oldest first.
            cut_short = await rounds.running(self.db, item.channel_key)
            message = cut_short[0] if cut_short else await inbox.oldest(self.db, item.channel_key)
            if message is None:
                return
            channel = await channels.get_channel(self.db, item.channel_key)
            if channel is not None and channel.paused:
                return  # recorded, and answered after /moderate resume
            saved = cut_short[1] if cut_short else None
            if cut_short is None:
                earlier: list[int] = []
                if item.together:
                    message, earlier = await self._all_waiting(message)
                await rounds.begin(self.db, message, earlier)
            try:
                await self._answer(message, saved)
            except Exception:
                log.exception("round failed in %s", item.channel_key)
                await rounds.finish(self.db, item.channel_key)
                await self.notice(
                    item.channel_key, "Something went wrong in this round; the message was kept.", message.thread
                )

    async def _all_waiting(self, oldest: inbox.Waiting) -> tuple[inbox.Waiting, list[int]]:
        """Every waiting message as one, for one round to answer: the newest, addressing everyone any
        of them addressed; and the earlier lines it answers too."""
        newest, mentions, texts, earlier = oldest, list(oldest.mentions), [oldest.text], []
        while (following := await inbox.oldest_after(self.db, newest.channel_key, newest.line_id)) is not None:
            earlier.append(newest.line_id)
            newest = following
            mentions += [m for m in following.mentions if m not in mentions]
            texts.append(following.text)
        return replace(newest, text="\n".join(texts), mentions=tuple(mentions)), earlier

    async def _answer(self, message: inbox.Waiting, saved: dict[str, Any] | None) -> None:
        async with self.port.answering(message.channel_key, message.event_id):
            if saved is None and await self.tasks.start_if_task(
                message.channel_key, message.thread, message.text, message.author_name
            ):
                await rounds.finish(self.db, message.channel_key)
                return  # answered by a task (the coordinator read the line as one)
            waiting = await self.engine.run_round(
                message.channel_key,
                text=message.text,
                author_name=message.author_name,
                mentions=list(message.mentions),
                thread=message.thread,
                saved=saved,
            )
        await rounds.finish(self.db, message.channel_key)
        await self.engine.start_approvals(waiting)
        self.engine.memory.after_round(message.channel_key)  # in the background: never in a reply's way

    async def notice(self, key: str, text: str, thread: str | None) -> None:
        try:
            await self.port.notice(key, text, thread)
        except Exception:
            log.exception("could not post a notice in %s", key)

    async def tell_approvers(self, key: str, text: str) -> None:
        try:
            await self.port.notify_approvers(key, text)
        except Exception:
            log.exception("could not notify the approvers of %s", key)

    async def drain(self, grace_seconds: float) -> None:
        """A graceful stop: take no more queued work, let running work finish within the grace
        period, then cancel it. What was queued is durable and picked up at the next start."""
        self._draining = True
        running = list(self._workers.values())
        if running:
            _, late = await asyncio.wait(running, timeout=grace_seconds)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await (
            self.engine.memory.stop()
        )  # a summary update cut short leaves the previous one, and runs at the next start
        if not running:
            return
        if late:
            log.warning("stopped %d channel(s) after the %.0f s grace period", len(late), grace_seconds)

    async def wait_idle(self, channel_key: str | None = None) -> None:
        """Until the channel's queued rounds (or every channel's) have run."""
        while True:
            tasks = [t for k, t in self._workers.items() if channel_key in (None, k)]
            if not tasks:
                await self.engine.memory.idle(channel_key)
                if self._settled is not None:
                    await self._settled()
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- commands ------------------------------------------------------------------------------

    async def run_command(
        self,
        key: str,
        command: Command,
        *,
        thread: str | None = None,
        actor: Actor | None = None,
        place: Place | None = None,
    ) -> CommandReply:
        """Carry out a parsed command in a channel, for `actor` (None: the operator, never refused)."""
        await self._ensure_channel(key, place)
        root = await self.approval_desk.root(key)  # a thread's approvers are its channel's
        if actor is not None and (refused := self.refusal(key, command, actor)) is not None:
            return CommandReply(refused, ok=False)
        if actor is not None and starts_model_work(command):
            if (refused := await self._model_work_refusal(root, actor)) is not None:
                return CommandReply(refused, ok=False)
        return await HANDLERS[type(command)](Call(self, key, thread, actor), command)

    async def _model_work_refusal(self, root: str, actor: Actor) -> str | None:
        """A command that calls a model passes the channel's flood limits and daily budget, like a message."""
        if self.tokens is not None and await self.tokens.spent(root):
            return budget_refusal(self.tokens.tokens_per_day)
        exempt = self.approval_desk.may_decide(root, actor)
        return self.flood.admit_command(root, actor.id, time.monotonic(), exempt=exempt)

    async def approves_everywhere(self, actor: Actor | None) -> bool:
        """Whether `actor` (None: the operator) is an approver of every channel this bot has seen."""
        if actor is None:
            return True
        return all(self.approval_desk.may_decide(key, actor) for key in await channels.channel_keys(self.db))

    def refusal(self, key: str, command: Command, actor: Actor) -> str | None:
        """The private line that refuses `actor` this command here, None when they may use it."""
        manager = actor.manager or self.surface_of(key) == "console"  # the console user manages the console
        return self.permissions.refusal(command, manager=manager, approver=self.approval_desk.may_decide(key, actor))

    @staticmethod
    def surface_of(channel_key: str) -> Surface:
        platform = channel_key.split(":", 1)[0]
        return "slack" if platform == "slack" else "discord" if platform == "discord" else "console"

    def help_text(self, key: str) -> str:
        """/help: the commands the channel's surface takes."""
        return help_text(self.surface_of(key))

    def running(self, key: str) -> bool:
        """Whether the channel has queued work in progress (a round, say)."""
        return key in self._workers

    def answer_waiting(self, key: str, *, together: bool = False) -> None:
        self.enqueue(AnswerInbox(key, together))

    async def mark(self, key: str, marker: str, thread: str | None, *, announce: str) -> None:
        """A marker in the channel's history, and the news posted there."""
        await history.append_line(self.db, key, LineKind.MARKER, "system", "system", marker)
        await self.notice(key, announce, thread)
