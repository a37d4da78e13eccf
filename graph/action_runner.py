"""Turns a persona's tool calls into results: refused, run now, or batched for approval."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from graph import tracing
from graph.action_marks import acting_for, claimed_run
from graph.actions import ActionCall, check_call
from graph.call_judge import CallJudge
from graph.mailbox import NOTE_ACTION, Mailbox
from graph.mcp import QUALIFIER, McpClient, McpOutcome, ToolCatalog, is_mcp_action
from graph.memory import REMEMBER_ACTION, Notebook
from graph.policy import PolicySettings, revision_of
from graph.port import OutboundPort, Timers
from graph.risk import Risk
from graph.stored_actions import StoredActions, is_stored_action
from personas import Persona
from storage import approvals, batches, history
from storage.database import Database, one_transaction
from storage.records import Approval, TaskStep, ToolCall

log = logging.getLogger(__name__)

IMMEDIATE_BATCH = "immediate:"  # the batch of an action claimed as it ran at once: no approval flow behind it


@dataclass(frozen=True)
class Ran:
    """How a run ended: what the persona reads, and what people are shown (the same, except for an
    MCP tool, whose answer reaches only the persona that called it)."""

    for_persona: str
    summary: str = ""
    tool_answer: str | None = None  # an MCP tool's own answer (or its error), for the persona alone

    @property
    def shown(self) -> str:
        return self.summary or self.for_persona


@dataclass(frozen=True)
class PersonaStep:
    """One model step of a persona that made tool calls: its words, its calls, and the thought
    signature its model sent with them."""

    text: str
    calls: Sequence[ToolCall]
    signature: str | None = None


@dataclass
class ActionRunner:
    db: Database
    port: OutboundPort
    timers: Timers | None
    policy: PolicySettings
    clock: Callable[[], float] = time.time
    # Claims approved runs; a claim by a process that is gone is reported as an unknown outcome.
    runner_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    mailbox: Mailbox | None = None  # delivers note_to calls
    notebook: Notebook | None = None  # keeps remember calls
    tools: ToolCatalog | None = None  # what the MCP servers offer
    mcp: McpClient | None = None  # runs MCP tool calls
    # Channels told that a server is down, per (server, outage): told once per outage.
    _told_down: set[tuple[str, int, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.judge = CallJudge(self.db, self.policy, self.tools, self.clock)
        self.stored = StoredActions(self.db, self.port, self.mailbox, self.notebook)

    def risk(self, name: str) -> Risk:
        """The risk a call of `name` carries (graph/call_judge.py)."""
        return self.judge.risk(name)

    async def handle(
        self,
        channel_key: str,
        thread: str | None,
        persona: Persona,
        step: PersonaStep,
        rejected: Sequence[Approval] = (),
        *,
        task: TaskStep | None = None,
        earlier_calls: int = 0,
    ) -> dict[str, Any] | None:
        """Store the persona's step with its calls, run or refuse what may go now, and return the
        batch that must wait for approval, if any.

        The step's line, its refusals, the waiting batch (storage.batches) and, with a batch, the
        post of its words commit together: a stop after that never leaves a call nobody is asked
        about, nor words the persona remembers saying that nobody saw. Every call that is refused or
        run gets its result in the persona's history at once; a waiting call gets its result when
        it is decided. `rejected` are the persona's proposals that were just turned down: a new
        call revises one of them. `task`: the task step the turn is, named by every request and
        claim it makes. `earlier_calls`: the calls the turn made in its earlier steps (and before its
        approvals' follow-up): [approvals] max_actions_per_turn counts the whole turn's calls.
        """
        checked: list[ActionCall] = []
        refused: list[tuple[ToolCall, str]] = []
        for call in step.calls:
            result = check_call(persona, call.id, call.name, call.args, self.tools)
            if isinstance(result, str):
                refused.append((call, result))
            else:
                checked.append(result)
        # A note to another persona is delivered at once, never through the policy; `remember` is
        # judged like any action (in command it waits for a person). Both count towards the turn.
        judged = [c for c in checked if c.name != NOTE_ACTION]
        turn_calls = earlier_calls + len(step.calls)
        waiting, now = await self.judge.judge(channel_key, persona, judged, turn_calls)
        batch = self._batch(channel_key, thread, persona, waiting, rejected, task, turn_calls) if waiting else None
        async with one_transaction(self.db):
            await history.append_persona_turn(
                self.db, channel_key, persona.id, persona.display_name, step.text, step.calls, step.signature
            )
            for call, why in refused:
                await approvals.audit(
                    self.db,
                    channel_key=channel_key,
                    persona_id=persona.id,
                    action=call.name,
                    event="refused",
                    actor=None,
                    detail=why,
                )
                await history.append_tool_result(self.db, channel_key, persona.id, call, why)
            if batch is not None:  # the turn ends with this step: its words go out with its waiting calls
                await batches.hold(self.db, batch)
                if step.text:
                    await self.port.post(channel_key, persona, step.text, thread)
        for note in [c for c in checked if c.name == NOTE_ACTION]:  # delivered now, claimed like any run at once
            await self.run_at_once(channel_key, thread, persona, note, task=task)
        for action, announced in now:
            outcome = await self.run_at_once(channel_key, thread, persona, action, task=task)
            if action.name == REMEMBER_ACTION:
                continue  # the notebook says in the channel what was noted, whatever the mode
            if announced or self.policy.announce_immediate:
                await self.port.notice(
                    channel_key, f"{persona.display_name} ran {action.describe()}: {outcome.shown}", thread
                )
        return batch

    def _batch(
        self,
        channel_key: str,
        thread: str | None,
        persona: Persona,
        waiting: Sequence[tuple[ActionCall, str]],
        rejected: Sequence[Approval],
        task: TaskStep | None,
        turn_calls: int,
    ) -> dict[str, Any]:
        return {
            "batch": f"approval:{channel_key}:{uuid.uuid4().hex[:12]}",
            "channel_key": channel_key,
            "thread": thread,
            "persona_id": persona.id,
            "task": task.as_dict() if task else None,
            "turn_calls": turn_calls,  # its follow-up goes on counting the same turn's calls
            "calls": [
                {
                    "call_id": c.call_id,
                    "name": c.name,
                    "args": c.args,
                    "revises": revision_of(c.name, rejected),
                    "reason": reason,
                    "confidence": c.confidence,
                    "risk": self.judge.risk(c.name).value,
                }
                for c, reason in waiting
            ],
        }

    async def run_at_once(
        self, channel_key: str, thread: str | None, persona: Persona, action: ActionCall, task: TaskStep | None = None
    ) -> Ran:
        """Run an action that needs no approval, outside any transaction: its claim (with its
        arguments, audited) commits first, then it runs, then its outcome and the persona's result
        commit together. A stop in between leaves a claim start-up reports as an unknown outcome."""
        claim = await approvals.claim_immediate(
            self.db,
            batch=f"{IMMEDIATE_BATCH}{channel_key}:{uuid.uuid4().hex[:12]}",
            call_id=action.call_id,
            channel_key=channel_key,
            thread=thread,
            persona_id=persona.id,
            action=action.name,
            args=action.args,
            runner=self.runner_id,
            confidence=action.confidence,
            risk=self.judge.risk(action.name).value,
            task=task,
        )
        ran = await self.run(channel_key, persona, action, approval_id=claim.id, thread=thread, claimed=True)
        finished = await approvals.get(self.db, claim.id)
        # A note to a persona is private, and one to itself is said by the notebook ("Rex noted: …").
        if finished is not None and not is_stored_action(action.name):
            await self.port.show_ran(finished, persona)
        return ran

    async def resume_stored(self, approval: Approval, persona: Persona) -> bool:
        """A `remember` or `note_to` whose claim a stopped process left running has not happened (its
        effect commits with its outcome): it runs now, once, and a run at once gives its persona the
        result. False for any other action, whose outcome may be unknown."""
        return await self.stored.resume(approval, persona, for_persona=approval.batch.startswith(IMMEDIATE_BATCH))

    async def run(
        self,
        channel_key: str,
        persona: Persona,
        call: ActionCall,
        approval_id: int | None = None,
        thread: str | None = None,
        *,
        claimed: bool = False,
    ) -> Ran:
        """Execute one action and audit it. Never raises: a failure becomes the persona's tool result.

        An approved action's run is claimed (committed) first, so a stop between the platform call
        and its outcome leaves a claim that start-up reports, never a run that happens twice. A run
        `claimed` at once (run_at_once) commits the persona's result with its outcome."""
        if (
            approval_id is not None
            and not claimed
            and await approvals.claim_run(self.db, approval_id, self.runner_id) is None
        ):
            return Ran("not run: it was not waiting to run")
        if is_stored_action(call.name):
            done = await self.stored.run(channel_key, persona, call, approval_id, thread, for_persona=claimed)
            return Ran(done if done is not None else "not run: it was not waiting to run")
        if is_mcp_action(call.name):
            return await self._run_tool(channel_key, persona, call, approval_id, thread, claimed)
        try:
            with tracing.tool_span(call.name, call.call_id, channel_key):
                if call.name == "schedule_post":
                    if self.timers is None:
                        raise RuntimeError("no scheduler is running")
                    at = datetime.fromisoformat(call.args["at"]).timestamp()
                    result = self.timers.schedule_post(at, channel_key, persona.id, call)
                else:
                    # The post is marked as this approval's, so a restart can look it up (graph/action_marks.py).
                    with acting_for(claimed_run(self.db, approval_id)):
                        result = await self.port.execute(channel_key, persona, call)
            ok = True
        except Exception as exc:
            log.warning("action %s by %s failed: %s", call.name, persona.id, type(exc).__name__)
            result, ok = f"failed: {exc}", False
        if approval_id is None:
            await approvals.audit(
                self.db,
                channel_key=channel_key,
                persona_id=persona.id,
                action=call.name,
                event="executed" if ok else "failed",
                actor=None,
                # What let it run without a person: the confidence its model stated (a waiting
                # call keeps its own with the approval).
                detail=result if call.confidence is None else f"{result} (stated confidence {call.confidence:g})",
            )
        ran = Ran(f"executed: {result}" if ok else result)
        if approval_id is not None:
            await self._finish(
                channel_key, persona, call, approval_id, ok, result, ran.for_persona if claimed else None
            )
        return ran

    async def _finish(
        self,
        channel_key: str,
        persona: Persona,
        call: ActionCall,
        approval_id: int,
        ok: bool,
        result: str,
        for_persona: str | None,
    ) -> None:
        """A claimed run's outcome, and (for a run at once) the persona's result, in one commit."""
        async with one_transaction(self.db):
            await approvals.finish(self.db, approval_id, ok=ok, result=result)
            if for_persona is not None:
                made = ToolCall(call.call_id, call.name, call.args)
                await history.append_tool_result(self.db, channel_key, persona.id, made, for_persona)

    async def _run_tool(
        self,
        channel_key: str,
        persona: Persona,
        call: ActionCall,
        approval_id: int | None,
        thread: str | None,
        claimed: bool = False,
    ) -> Ran:
        """An MCP tool call, on its server. The tool's answer is untrusted: it becomes the persona's
        tool result and nothing else; the approval message and the audit log get its summary."""
        server, _, tool = call.name.partition(QUALIFIER)
        if self.mcp is None:
            outcome = McpOutcome(False, "failed: no MCP servers run here", "failed: no MCP servers run here")
        else:
            outcome = await self.mcp.call(server, tool, call.args)
            if outcome.server_down and (server, self.mcp.outage(server), channel_key) not in self._told_down:
                self._told_down.add((server, self.mcp.outage(server), channel_key))
                await self.port.notice(
                    channel_key,
                    f"The MCP server {server} is down; its tools answer with an error until it is back.",
                    thread,
                )
        if approval_id is None:
            stated = "" if call.confidence is None else f" (stated confidence {call.confidence:g})"
            await approvals.audit(
                self.db,
                channel_key=channel_key,
                persona_id=persona.id,
                action=call.name,
                event="executed" if outcome.ok else "failed",
                actor=None,
                detail=outcome.summary + stated,
            )
        text = f"executed: {outcome.text}" if outcome.ok else outcome.text
        if approval_id is not None:
            await self._finish(
                channel_key, persona, call, approval_id, outcome.ok, outcome.summary, text if claimed else None
            )
        return Ran(text, outcome.summary, tool_answer=outcome.text)
