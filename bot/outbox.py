"""The durable outbox: everything Roundtable posts on Slack and Discord is stored first, then sent.

`Outbox` is the outbound port graph/ and the service see. A persona line, a notice, an approval request or decision, a
moderator's reason or a plan message becomes an outbox entry (storage.outbox), written in the transaction of what it
shows: inside a round's turn that is the turn's one transaction, so a line is posted exactly when it is stored. The
sender (one per process; processes sharing PostgreSQL claim entries with a lease) sends each conversation's entries
oldest first through the platform port, which raises `PostFailed` while it sends for the outbox. A failure is tried
again with backoff (tenacity's exponential wait with jitter, or the platform's Retry-After), also after a restart,
until `[outbox] give_up_after_minutes`; a post that cannot succeed (channel_not_found) fails at once. A failed entry
is counted, listed by /outbox, and the approvers are told once. The console prints at once, once what it shows is
committed (a turn cut by a crash and run again is never printed twice): its terminal goes down with the process.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, wait_exponential_jitter

from bot.config import Config
from bot.outbox_report import ENTRY_NAMES
from bot.port import SENDING, PostFailed, Sending
from graph.actions import ActionCall
from graph.port import OutboundPort
from personas import Persona
from storage import approvals
from storage import outbox as stored
from storage.database import Database, after_commit, when_committed
from storage.records import Approval

log = logging.getLogger(__name__)

DURABLE_PLATFORMS = ("slack", "discord")
PLAN_PREFIX = "outbox:"  # a plan message not posted yet: "outbox:<entry id>" until it is
POLL_SECONDS = 1.0  # how often a sender looks for entries other processes queued
CLAIM_BATCH = 50
SETTLE_SECONDS = 30.0  # the longest wait_idle waits for the outbox
# What a process queues is its own to send for this long (its sender is woken at the commit); then
# any process may take it, so a process that dies right after a commit holds up nothing for long.
QUEUED_HOLD_SECONDS = 2.0
SENDER_LOCK = "outbox-sender:"  # + the claimer: held by each sending process while it lives


@dataclass(frozen=True)
class OutboxSettings:
    give_up_after_seconds: float = 3600
    max_retry_seconds: float = 60
    claim_seconds: float = 60
    first_retry_seconds: float = 1


def outbox_settings(config: Config) -> OutboxSettings:
    section = config.settings.outbox
    return OutboxSettings(
        give_up_after_seconds=section.give_up_after_minutes * 60,
        max_retry_seconds=section.max_retry_seconds,
        claim_seconds=section.claim_seconds,
    )


def retry_delay(attempt: int, settings: OutboxSettings, retry_after: float | None) -> float:
    """The platform's Retry-After when it gave one, else exponential backoff with jitter."""
    if retry_after is not None:
        return max(0.0, retry_after)
    wait = wait_exponential_jitter(
        initial=settings.first_retry_seconds, max=settings.max_retry_seconds, jitter=settings.first_retry_seconds
    )
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    return float(min(wait(state), settings.max_retry_seconds))


class Outbox:
    """The port in front of the platform ports (`inner`): what it posts on a durable platform is queued,
    everything else (typing, reactions, actions, the console) goes straight through."""

    def __init__(
        self,
        inner: OutboundPort,
        db: Database,
        personas: Mapping[str, Persona],
        settings: OutboxSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        platforms: Sequence[str] = DURABLE_PLATFORMS,
    ) -> None:
        """`platforms`: whose queued posts this process sends, those its ports serve (none for the console)."""
        self.inner = inner
        self.platforms = tuple(platforms)
        self.db = db
        self.personas = personas
        self.settings = settings or OutboxSettings()
        self.clock = clock
        self.claimer = uuid.uuid4().hex
        self.failed = 0  # given up by this process since it started
        self._wake = asyncio.Event()
        self._sending: dict[int, asyncio.Task[None]] = {}
        self._loop: asyncio.Task[None] | None = None
        self.sent_hooks: list[Callable[[stored.Entry, Sending], Awaitable[None]]] = []  # bot/votes.py: posts' places

    # -- the port: queue what is posted ---------------------------------------------------------

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        if not _durable(channel_key):
            return await when_committed(self.db, lambda: self.inner.post(channel_key, persona, text, thread))
        await self._add(channel_key, thread, "post", {"persona": persona.id, "text": text})

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        if not _durable(channel_key):
            return await when_committed(self.db, lambda: self.inner.notice(channel_key, text, thread))
        await self._add(channel_key, thread, "notice", {"text": text})

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        if not _durable(channel_key):
            return await when_committed(self.db, lambda: self.inner.show_reason(channel_key, text, thread))
        await self._add(channel_key, thread, "reason", {"text": text})

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        if not _durable(channel_key):
            return await when_committed(self.db, lambda: self.inner.notify_approvers(channel_key, text))
        await self._add(channel_key, None, "approvers", {"text": text})

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        if not _durable(approval.channel_key):
            return await when_committed(self.db, lambda: self.inner.request_approval(approval, persona))
        payload = {"approval": approval.id, "persona": persona.id}
        await self._add(approval.channel_key, approval.thread, "request", payload, dedupe=f"request:{approval.id}")

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        if not _durable(approval.channel_key):
            return await when_committed(self.db, lambda: self.inner.show_decision(approval, persona))
        payload = {"approval": approval.id, "persona": persona.id}
        dedupe = f"decision:{approval.id}:{approval.status.value}"
        await self._add(approval.channel_key, approval.thread, "decision", payload, dedupe=dedupe)

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        """The plan's id is "outbox:<entry>" until its first post is sent; later edits find the message through it."""
        if not _durable(channel_key):
            return await self.inner.show_plan(channel_key, text, thread, shown_as)
        entry_id = await self._add(channel_key, thread, "plan", {"text": text, "shown_as": shown_as})
        return shown_as if shown_as is not None else f"{PLAN_PREFIX}{entry_id}"

    async def trace(self, channel_key: str, text: str) -> None:
        await self.inner.trace(channel_key, text)

    def typing(self, channel_key: str, persona: Persona) -> Any:
        return self.inner.typing(channel_key, persona)

    def answering(self, channel_key: str, event_id: str | None) -> Any:
        return self.inner.answering(channel_key, event_id)

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        # Nothing to queue: only the console shows it, and its channels are not durable.
        if not _durable(approval.channel_key):
            await when_committed(self.db, lambda: self.inner.show_ran(approval, persona))

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        return await self.inner.execute(channel_key, persona, call)

    async def _add(
        self,
        channel_key: str,
        thread: str | None,
        kind: str,
        payload: dict[str, Any],
        *,
        dedupe: str | None = None,
        conversation: str | None = None,
    ) -> int | None:
        async with self.db.transaction() as tx:  # joins the turn's transaction inside a round
            entry_id = await stored.add_in(
                tx,
                channel_key,
                thread,
                kind,
                payload,
                dedupe=dedupe,
                conversation=conversation,
                now=self.clock(),
                claimer=self.claimer,  # this process sends what it queued, unless it is gone
                lease_seconds=QUEUED_HOLD_SECONDS,
            )
        after_commit(self.db, self._wake.set)
        return entry_id

    # -- the sender ------------------------------------------------------------------------------

    @asynccontextmanager
    async def sending(self, grace_seconds: float = 5.0) -> AsyncIterator[Outbox]:
        """The sender runs while the block does; at its end, what is due gets `grace_seconds` to go out
        (what is left waits in the database for the next start)."""
        if not self.platforms:  # the console: what waits for Slack or Discord is left to their processes
            yield self
            return
        if self.db.dialect == "sqlite":  # one process owns the file: every claim left is a dead one's
            await stored.release_claims(self.db)
        await self.db.claim(f"{SENDER_LOCK}{self.claimer}")  # held while this process lives
        self._loop = asyncio.create_task(self._run(), name="outbox")
        try:
            yield self
        finally:
            with suppress(TimeoutError):
                await asyncio.wait_for(self.settled(), grace_seconds)
            self._loop.cancel()
            with suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None
            running = list(self._sending.values())
            for task in running:
                task.cancel()  # its entry stays in flight: the next start checks before posting again
            await asyncio.gather(*running, return_exceptions=True)

    async def settled(self, timeout: float = SETTLE_SECONDS) -> None:
        """Until nothing is being sent and nothing waiting is due now (a retry later does not count),
        for at most `timeout` seconds: a platform that keeps failing must not hold up its caller."""
        deadline = time.monotonic() + timeout
        while self._loop is not None and time.monotonic() < deadline:
            due = await stored.next_due_at(self.db, self.claimer, self.platforms)
            if not self._sending and (due is None or due > self.clock()):
                return
            self._wake.set()
            await asyncio.sleep(0.02)

    async def _run(self) -> None:
        probed = 0.0
        while True:
            self._wake.clear()
            try:
                if self.clock() - probed >= POLL_SECONDS:
                    probed = self.clock()
                    await self._take_over_from_the_gone()
                claimed = await stored.claim_due(
                    self.db, self.claimer, self.platforms, lease_seconds=self.settings.claim_seconds, limit=CLAIM_BATCH
                )
                due = await stored.next_due_at(self.db, self.claimer, self.platforms)
            except Exception:
                log.exception("the outbox could not be read; trying again")
                claimed, due = [], None
            for entry in claimed:
                if entry.id not in self._sending:
                    self._sending[entry.id] = asyncio.create_task(self._send(entry), name=f"outbox:{entry.id}")
            wait = POLL_SECONDS if due is None else min(POLL_SECONDS, max(0.01, due - self.clock()))
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _take_over_from_the_gone(self) -> None:
        """A process killed while it held posts (queued, or being sent) no longer holds its sender lock:
        its leases are given up at once rather than when they run out."""
        for holder in await stored.lease_holders(self.db, self.claimer, self.clock()):
            if not await self.db.held(f"{SENDER_LOCK}{holder}"):
                await stored.release_claims_of(self.db, holder)

    async def _send(self, entry: stored.Entry) -> None:
        attempt = Sending(entry.id, entry.in_flight_since, entry.created_at, entry.look_back_mark)
        attempt.keep_mark = lambda mark: self._keep_mark(attempt, mark)
        try:
            token = SENDING.set(attempt)
            try:
                if not await stored.mark_in_flight(self.db, entry.id, self.claimer, self.settings.claim_seconds):
                    return  # another process took it over
                async with self._leased(entry.id):
                    ref = await self._deliver(entry)
            finally:
                SENDING.reset(token)
        except PostFailed as failure:
            await self._failed_attempt(entry, failure, unknown=self._unknown(attempt, failure))
        except Exception as exc:  # a bug or an unexpected answer: tried again like a platform failure
            log.exception("outbox entry %s (%s) could not be sent", entry.id, entry.kind)
            await self._failed_attempt(entry, PostFailed(type(exc).__name__), unknown=True)
        else:
            try:
                await stored.mark_sent(self.db, entry.id, ref)
                for hook in self.sent_hooks:
                    await hook(entry, attempt)
            except Exception:  # posted, not recorded: the lease runs out, and the next attempt looks first
                log.exception("outbox entry %s was sent but could not be marked", entry.id)
        finally:
            self._sending.pop(entry.id, None)
            self._wake.set()

    async def _keep_mark(self, attempt: Sending, mark: int) -> None:
        """Stored before the platform call, so that the process that makes the next attempt, this one or
        another after a crash, looks only at what came after it; a lost claim stops the attempt."""
        if not await stored.keep_look_back_mark(self.db, attempt.entry_id, self.claimer, mark):
            raise PostFailed("taken over by another process")
        attempt.look_back_mark = mark

    @staticmethod
    def _unknown(attempt: Sending, failure: PostFailed) -> bool:
        """Whether what failed may have posted something: the next attempt looks before it posts."""
        return attempt.unknown_since is not None or attempt.pieces_posted > 0 or failure.maybe_posted

    @asynccontextmanager
    async def _leased(self, entry_id: int) -> AsyncIterator[None]:
        """The entry stays this process's while it is sent, however long the platform makes it wait."""
        lease = self.settings.claim_seconds

        async def renew() -> None:
            while True:
                await asyncio.sleep(lease / 3)
                with suppress(Exception):  # the database is away: the lease may run out, as after a crash
                    await stored.renew_lease(self.db, entry_id, self.claimer, lease)

        renewing = asyncio.create_task(renew(), name=f"outbox:{entry_id}:lease")
        try:
            yield
        finally:
            renewing.cancel()
            with suppress(asyncio.CancelledError):
                await renewing

    async def _deliver(self, entry: stored.Entry) -> str | None:
        key, thread, payload = entry.channel_key, entry.thread, entry.payload
        match entry.kind:
            case "post":
                await self.inner.post(key, self._persona(payload["persona"]), payload["text"], thread)
            case "notice":
                await self.inner.notice(key, payload["text"], thread)
            case "reason":
                await self.inner.show_reason(key, payload["text"], thread)
            case "approvers" | "failure":
                await self.inner.notify_approvers(key, payload["text"])
            case "request" | "decision":
                approval = await approvals.get(self.db, int(payload["approval"]))
                if approval is None:
                    return None
                persona = self._persona(payload["persona"])
                if entry.kind == "request":
                    await self.inner.request_approval(approval, persona)
                else:
                    await self.inner.show_decision(approval, persona)
            case "plan":
                return await self.inner.show_plan(key, payload["text"], thread, await self._plan_place(payload))
            case _:
                raise PostFailed(f"unknown outbox entry kind {entry.kind!r}", permanent=True)
        return None

    async def _plan_place(self, payload: Mapping[str, Any]) -> str | None:
        shown_as = payload.get("shown_as")
        if not isinstance(shown_as, str) or not shown_as.startswith(PLAN_PREFIX):
            return shown_as if isinstance(shown_as, str) else None
        first = await stored.get(self.db, int(shown_as.removeprefix(PLAN_PREFIX)))
        return first.sent_ref if first is not None else None  # failed or gone: the plan is posted anew

    def _persona(self, persona_id: str) -> Persona:
        persona = self.personas.get(persona_id)
        if persona is None:
            raise PostFailed(f"no persona {persona_id!r} any more", permanent=True)
        return persona

    async def _failed_attempt(self, entry: stored.Entry, failure: PostFailed, *, unknown: bool) -> None:
        now = self.clock()
        try:
            if failure.permanent or now - entry.created_at >= self.settings.give_up_after_seconds:
                if await stored.mark_failed(self.db, entry.id, failure.reason):
                    self.failed += 1
                    log.warning("outbox entry %s (%s) failed for good: %s", entry.id, entry.kind, failure.reason)
                    if entry.kind != "failure":
                        await self._tell_approvers(entry, failure.reason, now)
                return
            delay = retry_delay(entry.attempts + 1, self.settings, failure.retry_after)
            log.info("outbox entry %s (%s) failed (%s); again in %.1f s", entry.id, entry.kind, failure.reason, delay)
            await stored.retry_later(self.db, entry.id, self.claimer, now + delay, failure.reason, unknown=unknown)
        except Exception:  # the database is away too: the lease runs out and the entry is tried again
            log.exception("could not record how outbox entry %s went", entry.id)

    async def _tell_approvers(self, entry: stored.Entry, reason: str, now: float) -> None:
        """Once per conversation and hour, however many of its posts fail; in a conversation of its
        own, so it never waits behind the posts that failed."""
        where = stored.conversation_of(entry.channel_key, entry.thread)
        text = (
            f"A {ENTRY_NAMES.get(entry.kind, 'message')} for {where} could not be posted ({reason}); /outbox lists it."
        )
        await self._add(
            entry.channel_key,
            None,
            "failure",
            {"text": text},
            dedupe=f"failed:{where}:{int(now // 3600)}",
            conversation=f"{where}#approvers",
        )


def platforms_sent_by(port: OutboundPort) -> tuple[str, ...]:
    """The platforms whose queued posts a process with `port` sends: those the port says it serves
    (`platforms`). The console serves none of them: opened on a bot's database, it must not take
    Slack's or Discord's posts. A port that does not say (a test's recording port) stands in for all."""
    served = getattr(port, "platforms", DURABLE_PLATFORMS)
    return tuple(platform for platform in DURABLE_PLATFORMS if platform in served)


def _durable(channel_key: str) -> bool:
    return channel_key.partition(":")[0] in DURABLE_PLATFORMS
