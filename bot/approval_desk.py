"""What approvers do, on every surface: decide, revise and view a request, settle an action whose
outcome is unknown; and what timers do to approvals (expire them, publish a scheduled post).

Slack, Discord and the console only carry the text: who may decide, and that the first decision
wins, is settled here (with the wording from bot/approvals.py). A decision that completes its batch
queues the batch's resumption in the channel's queue, through the service's `enqueue`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.approvals import (
    GRANTS_HEADING,
    NOTHING_PENDING,
    PENDING_HEADING,
    UNKNOWN_HEADING,
    already_decided,
    deciding_channel,
    elsewhere,
    refusal,
    unknown_outcome_line,
    wanted,
)
from bot.revisions import edited_arguments, full_arguments
from graph.actions import ActionCall
from graph.engine import RoundEngine
from graph.mcp import is_mcp_action
from graph.trust import figures, next_level, task_counts, trust_record
from personas import Persona
from storage import approvals, channels, cut_runs, tool_grants, trust
from storage.approvals import Person
from storage.database import Database
from storage.records import Approval, ApprovalStatus

log = logging.getLogger(__name__)

RECOVERED_HEADING = "Finished by start-up recovery, after a stop cut them short (last 24 hours):"
RECOVERED_SHOWN_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Actor:
    """Who typed a command or pressed a button: a platform user id, a display name and, on Slack, the
    user's team (workspace), since user ids are only unique within one. `manager`: the platform says
    this user may change the channel (bot/permissions.py)."""

    id: str
    name: str
    team: str | None = None
    manager: bool = False

    @property
    def person(self) -> Person | None:
        """Who decided, as the audit stores it: the platform's user id and team, never the name."""
        return (self.id, self.team) if self.id else None


@dataclass(frozen=True)
class CommandReply:
    """`reply` goes back to whoever typed the command, or sent a message past a flood limit; changes are also
    announced in the channel."""

    reply: str
    ok: bool = True
    announced: bool = False  # the same news already went to the channel


IsApprover = Callable[[str, str, str | None], bool]
"""(channel key, user id, team) -> whether that user may decide approvals there."""


def nobody(channel_key: str, user_id: str, team: str | None) -> bool:
    return False


@dataclass(frozen=True)
class ResumeApprovals:
    """A queued item: continue an approval batch whose approvals are all decided."""

    channel_key: str
    batch: str


@dataclass(frozen=True)
class RunApproved:
    """A queued item: run one approved action outside its batch's flow (a retry)."""

    channel_key: str
    approval_id: int


class ApprovalDesk:
    def __init__(
        self,
        db: Database,
        engine: RoundEngine,
        personas: Mapping[str, Persona],
        *,
        is_approver: IsApprover,
        surface: str,
        enqueue: Callable[[ResumeApprovals | RunApproved], None],
        wait_idle: Callable[[], Awaitable[None]],
        approvals_channel: Callable[[str], bool] = lambda key: False,
    ) -> None:
        self.db = db
        self.approvals_channel = approvals_channel  # whether a key is the configured approvals channel
        self._roots: dict[str, str] = {}  # thread key -> its channel's key, as looked up (never changes)
        self.engine = engine
        self.personas = personas
        self.is_approver = is_approver
        self.surface = surface  # "same", or the platform all requests are shown on
        self._enqueue = enqueue
        self._wait_idle = wait_idle
        self._timer_callbacks = 0  # expiries in flight, so waiters cannot slip between their steps

    def may_decide(self, channel_key: str, actor: Actor) -> bool:
        """Whether `actor` approves in this channel; a thread has its channel's approvers (once
        `root` or `note_parent` has seen the thread)."""
        return self.is_approver(self._roots.get(channel_key, channel_key), actor.id, actor.team)

    def note_parent(self, key: str, parent_key: str | None) -> None:
        if parent_key is not None and parent_key != key:
            self._roots[key] = parent_key

    async def root(self, key: str) -> str:
        """The channel a thread is in (storage records it); any other key unchanged."""
        if key not in self._roots:
            self.note_parent(key, await channels.root_key(self.db, key))
        return self._roots.get(key, key)

    def decided_where(self, approval: Approval, decided_in: str | None) -> str:
        return deciding_channel(approval, decided_in, self.surface)

    async def typed_elsewhere(self, approval: Approval, typed_in: str | None) -> bool:
        """A typed command acts only on a request of its own channel (or a thread of it), or in the
        configured approvals channel: a channel's approver never reaches another channel."""
        if typed_in is None or self.approvals_channel(typed_in):
            return False
        return await self.root(approval.channel_key) != await self.root(typed_in)

    async def decide(
        self,
        approval_id: int,
        actor: Actor,
        approve: bool,
        comment: str = "",
        incident: bool = False,
        *,
        decided_in: str | None = None,
        always: bool = False,
        typed_in: str | None = None,
    ) -> CommandReply:
        """An approver's decision. The first decision wins; anyone else is refused and nothing changes.
        `always` (an MCP tool's "Approve always") also lets that tool run without asking in this
        channel from now on, until `/approvals forget SERVER.TOOL`."""
        refused = await self.why_not(approval_id, actor, decided_in=decided_in, typed_in=typed_in)
        if refused is not None:
            return CommandReply(refused, ok=False)
        approval = await approvals.get(self.db, approval_id)
        if always and not (approve and approval is not None and is_mcp_action(approval.action)):
            return CommandReply("Only a tool from an MCP server can be approved always.", ok=False)
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED
        decided = await approvals.decide(
            self.db, approval_id, status, actor=actor.name, comment=comment, incident=incident, person=actor.person
        )
        if decided is None:  # someone else decided between the check and the update: the first wins
            return await self._decided_first(approval_id)
        if always:
            await tool_grants.grant(self.db, decided.channel_key, decided.action, actor.name)
        await self._resume_if_complete(decided)
        if always:
            return CommandReply(f"Approved #{approval_id}; {decided.action} now runs without asking in this channel.")
        return CommandReply(f"{'Approved' if approve else 'Rejected'} #{approval_id}.")

    async def why_not(
        self,
        approval_id: int,
        actor: Actor,
        *,
        decided_in: str | None = None,
        shown_in: str | None = None,
        typed_in: str | None = None,
    ) -> str | None:
        """Why this person cannot decide this approval now, in one line; None when they can. Told at
        once when a button is pressed or a form opened; deciding checks again. `shown_in`: the channel
        of the message whose button was pressed, when a request is only decided where it was posted.
        `typed_in`: the channel of a typed command, which decides there (see typed_elsewhere)."""
        approval = await approvals.get(self.db, approval_id)
        if approval is not None and shown_in is not None and approval.channel_key != shown_in:
            return elsewhere(approval_id)
        if approval is not None and await self.typed_elsewhere(approval, typed_in):
            return elsewhere(approval_id)
        where = self.decided_where(approval, typed_in or decided_in) if approval is not None else ""
        may = approval is not None and self.is_approver(await self.root(where), actor.id, actor.team)
        return refusal(approval, approval_id, may_decide=may)

    async def withdraw(self, approval_ids: list[int], actor: Actor, reason: str) -> list[int]:
        """Reject requests whose work was called off (a cancelled task's steps), on behalf of who called
        it off, with why; the ones still pending are rejected, and their flows go on as for any rejection."""
        rejected: list[int] = []
        for approval_id in approval_ids:
            decided = await approvals.decide(
                self.db, approval_id, ApprovalStatus.REJECTED, actor=actor.name, comment=reason
            )
            if decided is not None:
                rejected.append(approval_id)
                await self._resume_if_complete(decided)
        return rejected

    async def forget_tool(self, key: str, tool: str, actor: Actor) -> CommandReply:
        """/approvals forget SERVER.TOOL (approvers, by the registry): the tool waits for approval here again."""
        withdrawn = await tool_grants.forget(self.db, key, tool, actor.name)
        if not withdrawn:
            return CommandReply(f"{tool} is not approved always in this channel.", ok=False)
        threads = len([k for k in withdrawn if k != key])
        in_threads = f"{threads} of {'its' if key in withdrawn else 'this channel’s'} threads"
        where = " and in ".join([*(["this channel"] if key in withdrawn else []), *([in_threads] if threads else [])])
        return CommandReply(f"{tool} waits for approval again in {where} ({actor.name} withdrew Approve always).")

    async def _decided_first(self, approval_id: int) -> CommandReply:
        current = await approvals.get(self.db, approval_id)
        return CommandReply(already_decided(current) if current else f"There is no approval #{approval_id}.", ok=False)

    async def revise(
        self,
        approval_id: int,
        actor: Actor,
        args: dict[str, Any],
        *,
        decided_in: str | None = None,
        typed_in: str | None = None,
    ) -> CommandReply:
        """An approver's edited arguments, approved with them in one transaction (so the edit and the
        work it releases are stored together). Arguments the action's spec refuses change nothing."""
        approval = await approvals.get(self.db, approval_id)
        refused = await self.why_not(approval_id, actor, decided_in=decided_in, typed_in=typed_in)
        if refused is not None or approval is None:
            return CommandReply(refused or "", ok=False)
        persona = self.personas.get(approval.persona_id)
        tools = self.engine.runner.tools
        checked = edited_arguments(approval, persona, args, tools) if persona else f"no persona {approval.persona_id!r}"
        if isinstance(checked, str):
            return CommandReply(f"Approval #{approval_id} is unchanged: {checked}.", ok=False)
        if checked == approval.args:  # nothing edited: a plain approval
            decided = await approvals.decide(
                self.db, approval_id, ApprovalStatus.APPROVED, actor=actor.name, person=actor.person
            )
        else:
            decided = await approvals.approve_edited(
                self.db, approval_id, checked, actor=actor.name, person=actor.person
            )
        if decided is None:
            return await self._decided_first(approval_id)
        await self._resume_if_complete(decided)
        edited = "with the edited arguments" if decided.original_args is not None else "(the arguments were unchanged)"
        return CommandReply(f"Approved #{approval_id} {edited}.")

    async def show_arguments(
        self, approval_id: int, actor: Actor, *, decided_in: str | None = None, typed_in: str | None = None
    ) -> CommandReply:
        """A request's full arguments, for an approver of it, whatever its state. Only approvers: a
        request can carry what a persona means to send one person (send_message)."""
        approval = await approvals.get(self.db, approval_id)
        if approval is None:
            return CommandReply(f"There is no approval #{approval_id}.", ok=False)
        if await self.typed_elsewhere(approval, typed_in):
            return CommandReply(elsewhere(approval_id), ok=False)
        where = await self.root(self.decided_where(approval, typed_in or decided_in))
        if not self.is_approver(where, actor.id, actor.team):
            return CommandReply(f"Only approvers can see the full arguments of #{approval_id}.", ok=False)
        return CommandReply(full_arguments(approval, self._persona_name(approval.persona_id)))

    async def settle_unknown(
        self, approval_id: int, actor: Actor, retry: bool, *, typed_in: str | None = None
    ) -> CommandReply:
        """An approver runs an action whose outcome is unknown once more, or closes it."""
        approval = await approvals.get(self.db, approval_id)
        if approval is None:
            return CommandReply(f"There is no approval #{approval_id}.", ok=False)
        if await self.typed_elsewhere(approval, typed_in):
            return CommandReply(elsewhere(approval_id), ok=False)
        if not self.is_approver(await self.root(approval.channel_key), actor.id, actor.team):
            return CommandReply(f"Only approvers can retry or close #{approval_id}.", ok=False)
        settled = await approvals.settle_unknown(self.db, approval_id, retry=retry, actor=actor.name)
        if settled is None:
            return CommandReply(f"Approval #{approval_id} has no unknown outcome ({approval.status}).", ok=False)
        if retry:
            self._enqueue(RunApproved(settled.channel_key, settled.id))
            return CommandReply(f"Running #{approval_id} again.")
        await self.engine.show_outcome(settled)
        return CommandReply(f"Closed #{approval_id} without running it again.")

    async def expire_approval(self, approval_id: int) -> None:
        self._timer_callbacks += 1
        try:
            expired = await approvals.decide(
                self.db, approval_id, ApprovalStatus.EXPIRED, actor="timeout", comment="timed out"
            )
            if expired is not None:
                await self._resume_if_complete(expired)
        finally:
            self._timer_callbacks -= 1

    async def _resume_if_complete(self, approval: Approval) -> None:
        if not await approvals.awaits_decision(self.db, approval.batch):
            self._enqueue(ResumeApprovals(approval.channel_key, approval.batch))

    async def publish_scheduled(self, channel_key: str, persona_id: str, name: str, args: dict) -> None:
        persona = self.personas.get(persona_id)
        if persona is None:
            log.warning("scheduled post for unknown persona %s dropped", persona_id)
            return
        await self.engine.runner.run(
            channel_key, persona, ActionCall(call_id=f"scheduled-{persona_id}", name=name, args=args)
        )

    async def wait_for_overdue_approvals(self, timeout: float = 10.0) -> None:
        """Until approvals already past their expiry are expired and their flows have run."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = time.time()
            overdue = any(a.expires_at <= now for a in await approvals.pending(self.db))
            if not overdue and not self._timer_callbacks:
                break
            await asyncio.sleep(0.05)
        await self._wait_idle()

    async def pending_list(
        self,
        key: str,
        *,
        heading: str = PENDING_HEADING,
        clean: Callable[[str], str] = str,
        detail: Callable[[Approval], Awaitable[str]] | None = None,
    ) -> str:
        """The channel's pending approvals, one a line, then the MCP tools approved always here. A surface
        may say how its approvers decide (`heading`), make text safe for its markup (`clean`) and add to
        each request's line (`detail`)."""
        waiting = await approvals.pending(self.db, key)
        rows = [
            wanted(a, self._persona_name(a.persona_id), clean) + (await detail(a) if detail else "") for a in waiting
        ]
        listed = heading + "\n" + "\n".join(rows) if rows else NOTHING_PENDING
        unknown = [a for a in await approvals.with_status(self.db, ApprovalStatus.UNKNOWN) if a.channel_key == key]
        if unknown:  # cut short by a stop: only an approver settles them
            listed += f"\n{UNKNOWN_HEADING}\n" + "\n".join(
                unknown_outcome_line(a, self._persona_name(a.persona_id), clean) for a in unknown
            )
        if recovered := await cut_runs.recovered(self.db, key, time.time() - RECOVERED_SHOWN_SECONDS):
            listed += f"\n{RECOVERED_HEADING}\n" + "\n".join(
                clean(f"#{a.id} {a.action}: {a.status.value}, {a.result or ''}") for a in recovered
            )
        if granted := await tool_grants.grants(self.db, key):
            listed += f"\n{GRANTS_HEADING}\n" + "\n".join(clean(f"{g.tool}, by {g.granted_by}") for g in granted)
        return listed

    async def trust_table(self, channel_key: str | None) -> str:
        """Each persona's trust in the channel's workspace or guild (None: every one, summed)."""
        counts = await trust.trust_counts(self.db, channel_key)
        ended = await trust.ended_tasks(self.db, channel_key)
        now = time.time()
        rows = []
        for persona in self.personas.values():
            counted = counts.get(persona.id)
            steps = task_counts(ended, persona.id, counted.reset_at if counted else None)
            record = trust_record(counted, now, steps)
            rows.append(f"{persona.display_name}: {figures(record)} — {next_level(record)}")
        where = "" if channel_key is not None else " in every workspace and guild"
        return f"Trust levels{where}:\n" + "\n".join(rows)

    def _persona_name(self, persona_id: str) -> str:
        persona = self.personas.get(persona_id)
        return persona.display_name if persona else persona_id
