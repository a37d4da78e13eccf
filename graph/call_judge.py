"""How one step's checked calls are judged: which wait for a person (and why), which run now
(and whether that is said in the channel), and the risk each carries. The decision itself is
graph/policy.py's `verdict`; this gathers what it is given: the channel's mode, the persona's
trust, the MCP tool's standing, the risk, and the calls of the whole turn so far."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graph import observe
from graph.actions import ActionCall, cost_of, declared_risk
from graph.mcp import QUALIFIER, ToolCatalog, is_mcp_action
from graph.policy import (
    PolicySettings,
    ToolStanding,
    Trust,
    Verdict,
    is_sensitive,
    mode_for,
    verdict,
    wait_triggers,
)
from graph.risk import Risk, risk_of
from graph.trust import task_counts, trust_record
from personas import Persona
from storage import channels, tool_grants
from storage import trust as stored_trust
from storage.database import Database
from storage.records import ApprovalMode

Judged = tuple[list[tuple[ActionCall, str]], list[tuple[ActionCall, bool]]]
"""(the calls that wait, each with why; the calls that run now, each with whether it is announced)."""


@dataclass
class CallJudge:
    db: Database
    policy: PolicySettings
    tools: ToolCatalog | None = None  # what the MCP servers offer
    clock: Callable[[], float] = time.time

    async def judge(self, channel_key: str, persona: Persona, checked: Sequence[ActionCall], turn_calls: int) -> Judged:
        """Which calls wait for a person (with why) and which run now (and whether that is announced).
        `turn_calls`: the calls of the whole turn so far, this step's included."""
        if not checked:
            return [], []
        channel = await channels.get_channel(self.db, channel_key)
        mode = channel.approval_mode if channel else ApprovalMode.IN_THE_LOOP
        judged_by_trust = self.policy.auto_relax or self.policy.trust_sets_mode
        trust = await self._trust(persona, channel_key) if judged_by_trust else Trust.NEW
        waiting: list[tuple[ActionCall, str]] = []
        now: list[tuple[ActionCall, bool]] = []
        for action in checked:
            decision = verdict(
                action.name,
                mode=mode,
                actions_in_turn=turn_calls,
                trust=trust,
                settings=self.policy,
                cost=cost_of(action.name, self.policy.action_costs),
                confidence=action.confidence,
                tool=await self._standing(channel_key, action.name),
                risk=self.risk(action.name),
            )
            if decision.verdict is Verdict.WAIT:
                self._count_escalation(action, mode, trust, turn_calls)
                waiting.append((action, self.why(action.name, decision.reason)))
            else:
                now.append((action, decision.verdict is Verdict.ANNOUNCE))
        return waiting, now

    def why(self, name: str, reason: str) -> str:
        """Why a call waits; for an MCP tool, also its server's own annotations, shown as untrusted hints."""
        tool = self.tools.tool(name) if self.tools is not None and is_mcp_action(name) else None
        hints = tool.hints() if tool else ""
        return "; ".join(part for part in (reason, f"server hints (untrusted): {hints}" if hints else "") if part)

    def risk(self, name: str) -> Risk:
        """The risk a call of `name` carries (graph/risk.py): declared by a built-in action, configured
        for an MCP tool (whose sensitivity is its own name's, without the server's)."""
        if not is_mcp_action(name):
            return risk_of(declared=declared_risk(name), sensitive=is_sensitive(name, self.policy.sensitive))
        tool = name.partition(QUALIFIER)[2]
        return risk_of(
            declared=self.tools.declared_risk(name) if self.tools else None,
            sensitive=is_sensitive(tool, self.policy.sensitive),
            mcp_read_only=self.tools is not None and self.tools.is_read_only(name),
        )

    async def _standing(self, channel_key: str, name: str) -> ToolStanding | None:
        if not is_mcp_action(name):
            return None
        read_only = self.tools is not None and self.tools.is_read_only(name)
        granted = not read_only and await tool_grants.is_granted(self.db, channel_key, name)
        return ToolStanding(read_only, granted, own_risk=self.tools is not None and self.tools.has_own_risk(name))

    async def _trust(self, persona: Persona, channel_key: str) -> Trust:
        """The persona's trust in the channel's workspace or guild."""
        counted = (await stored_trust.trust_counts(self.db, channel_key)).get(persona.id)
        ended = await stored_trust.ended_tasks(self.db, channel_key)
        steps = task_counts(ended, persona.id, counted.reset_at if counted else None)
        return trust_record(counted, self.clock(), steps).level

    def _count_escalation(self, action: ActionCall, mode: ApprovalMode, trust: Trust, actions_in_turn: int) -> None:
        """Count on /metrics a call sent to a person: by the triggers that made it wait, and the mode it was judged in."""
        triggers = wait_triggers(
            actions_in_turn=actions_in_turn,
            cost=cost_of(action.name, self.policy.action_costs),
            confidence=action.confidence,
            settings=self.policy,
        )
        judged_in = mode_for(
            mode, trust, trust_sets_mode=self.policy.trust_sets_mode, mcp_tool=is_mcp_action(action.name)
        )
        observe.escalated([kind for kind, _ in triggers], judged_in.value)
