"""Turns a persona's tool calls into results: refused, run now, or batched for approval."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.actions import ActionCall, check_call, cost_of
from graph.mailbox import NOTE_ACTION, Mailbox
from graph.policy import PolicySettings, Trust, Verdict, revision_of, verdict
from graph.port import OutboundPort, Timers
from graph.trust import trust_record
from personas import Persona
from storage import approvals, channels, history
from storage.database import Database
from storage.records import Approval, ApprovalMode, ToolCall

log = logging.getLogger(__name__)


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

    async def handle(
        self,
        channel_key: str,
        thread: str | None,
        persona: Persona,
        tool_calls: Sequence[ToolCall],
        rejected: Sequence[Approval] = (),
    ) -> dict[str, Any] | None:
        """Run or refuse what may go now; return the batch that must wait for approval, if any.

        Every call that is refused or run gets its result in the persona's history at once; a
        waiting call gets its result when it is decided. `rejected` are the persona's proposals
        that were just turned down: a new call revises one of them.
        """
        checked: list[ActionCall] = []
        for call in tool_calls:
            result = check_call(persona, call.id, call.name, call.args)
            if isinstance(result, str):
                await approvals.audit(
                    self.db,
                    channel_key=channel_key,
                    persona_id=persona.id,
                    action=call.name,
                    event="refused",
                    actor=None,
                    detail=result,
                )
                await history.append_tool_result(self.db, channel_key, persona.id, call, result)
            else:
                checked.append(result)
        for note in [c for c in checked if c.name == NOTE_ACTION]:  # delivered now, never through the policy
            sent = await self.mailbox.send(channel_key, persona, note) if self.mailbox else "error: no mailbox here"
            await history.append_tool_result(
                self.db, channel_key, persona.id, ToolCall(note.call_id, note.name, note.args), sent
            )
        checked = [c for c in checked if c.name != NOTE_ACTION]
        if not checked:
            return None
        channel = await channels.get_channel(self.db, channel_key)
        mode = channel.approval_mode if channel else ApprovalMode.IN_THE_LOOP
        trust = await self._trust(persona) if self.policy.auto_relax else Trust.NOVICE
        waiting: list[tuple[ActionCall, str]] = []  # with why it waits
        for action in checked:
            decision = verdict(
                action.name,
                mode=mode,
                actions_in_turn=len(checked),
                trust=trust,
                settings=self.policy,
                cost=cost_of(action.name, self.policy.action_costs),
                confidence=action.confidence,
            )
            if decision.verdict is Verdict.WAIT:
                waiting.append((action, decision.reason))
                continue
            outcome = await self.run(channel_key, persona, action)
            made = ToolCall(action.call_id, action.name, action.args)
            await history.append_tool_result(self.db, channel_key, persona.id, made, outcome)
            if decision.verdict is Verdict.ANNOUNCE:
                await self.port.notice(
                    channel_key, f"{persona.display_name} ran {action.describe()}: {outcome}", thread
                )
        if not waiting:
            return None
        return {
            "batch": f"approval:{channel_key}:{uuid.uuid4().hex[:12]}",
            "channel_key": channel_key,
            "thread": thread,
            "persona_id": persona.id,
            "calls": [
                {
                    "call_id": c.call_id,
                    "name": c.name,
                    "args": c.args,
                    "revises": revision_of(c.name, rejected),
                    "reason": reason,
                    "confidence": c.confidence,
                }
                for c, reason in waiting
            ],
        }

    async def run(self, channel_key: str, persona: Persona, call: ActionCall, approval_id: int | None = None) -> str:
        """Execute one action and audit it. Never raises: a failure becomes the persona's tool result.

        An approved action's run is claimed (committed) first, so a stop between the platform call
        and its outcome leaves a claim that start-up reports, never a run that happens twice."""
        if approval_id is not None and await approvals.claim_run(self.db, approval_id, self.runner_id) is None:
            return "not run: it was not waiting to run"
        try:
            if call.name == "schedule_post":
                if self.timers is None:
                    raise RuntimeError("no scheduler is running")
                at = _timestamp(call.args["at"])
                result = self.timers.schedule_post(at, channel_key, persona.id, call)
            else:
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
        else:
            await approvals.finish(self.db, approval_id, ok=ok, result=result)
        return f"executed: {result}" if ok else result

    async def _trust(self, persona: Persona) -> Trust:
        events = await approvals.audit_events(self.db, [persona.id])
        return trust_record(events, self.clock()).level


def _timestamp(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value).timestamp()
