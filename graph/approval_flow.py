"""One persona turn's actions waiting for a person: request, interrupt, execute, and the persona's follow-up.

It runs in its own LangGraph thread (the batch id), so a pending approval holds up nothing else in
the channel. Everything before `interrupt()` runs again on resume, so it is idempotent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, interrupt

from graph.action_runner import ActionRunner
from graph.actions import ActionCall
from graph.deps import EngineDeps
from graph.state import RoundInput
from graph.tool_steps import ToolSteps
from storage import approvals, batches, history
from storage.database import one_transaction
from storage.records import Approval, ApprovalStatus, TaskStep, ToolCall


class ApprovalState(TypedDict):
    batch: str
    channel_key: str
    thread: str | None
    persona_id: str
    task: dict[str, Any] | None  # the task step the calls serve (storage.records.TaskStep.as_dict)
    calls: list[dict[str, Any]]  # call_id, name, args, revises, reason, confidence, risk (a rollback: persona_id, task)
    rollback: bool  # undos of a cancelled task (graph/rollback.py): no persona reads their outcome
    turn_calls: int  # the calls of the persona's turn up to these: its follow-up goes on counting them
    outcomes: list[str]
    new_batches: list[dict[str, Any]]


def outcome(
    approval: Approval,
    decider: str | None = None,
    at: str = "",
    clean: Callable[[str], str] = str,
    *,
    for_persona: bool = False,
) -> str:
    """How an approval stands, in the one wording every surface shows (Slack, Discord, notices) and
    the persona reads as its call's result. `decider` is a mention or a name (by default the stored
    name), `at` a time if shown; `clean` makes the action's result and the approver's feedback safe
    for the platform's markup. The persona is not told what only approvers act on: that the request
    now shows edited arguments, or how to retry or close an unknown outcome."""
    decider = decider if decider is not None else str(approval.decided_by)
    when = f" at {at}" if at else ""
    if approval.original_args is not None and not for_persona:  # the request shows what ran, not what was asked
        when += " with edited arguments"
    result = clean(approval.result or "")
    match approval.status:
        case ApprovalStatus.EXECUTED:
            return f"Approved by {decider}{when}, executed: {result}"
        case ApprovalStatus.FAILED:
            return f"Approved by {decider}{when}, but it {result}"
        case ApprovalStatus.UNKNOWN:
            unknown = f"Approved by {decider}{when}, but {result}: it may or may not have run"
            if for_persona:
                return unknown
            return f"{unknown}. Approvers: /approvals retry {approval.id} or /approvals close {approval.id}."
        case ApprovalStatus.REJECTED:
            return f"Rejected by {decider}: {clean(approval.comment or '') or 'no feedback given'}"
        case ApprovalStatus.EXPIRED:
            return "Expired: nobody decided in time."
        case ApprovalStatus.APPROVED | ApprovalStatus.RUNNING:
            return f"Approved by {decider}{when}; running it now."
    return f"Still pending (approval #{approval.id})."


def with_answer(outcome: str, answer: str | None) -> str:
    """An MCP tool's outcome with the tool's own answer, which only the calling persona reads."""
    return outcome if answer is None else f"{outcome}\nThe tool's answer:\n{answer}"


class ApprovalFlow:
    def __init__(self, deps: EngineDeps, runner: ActionRunner, tool_steps: ToolSteps) -> None:
        self.deps = deps
        self.runner = runner
        self.tool_steps = tool_steps

    async def request(self, state: ApprovalState) -> dict[str, Any]:
        ids: list[int] = []
        for call in state["calls"]:
            persona = self.deps.personas[call.get("persona_id") or state["persona_id"]]
            # The approval and its request (the outbox) commit together: a crash between them would
            # leave a request nobody sees, since the node run again finds the approval already made.
            async with one_transaction(self.deps.db):
                approval, created = await approvals.request(
                    self.deps.db,
                    batch=state["batch"],
                    call_id=call["call_id"],
                    channel_key=state["channel_key"],
                    thread=state["thread"],
                    persona_id=persona.id,
                    action=call["name"],
                    args=call["args"],
                    timeout_seconds=self.deps.settings.approval_timeout_seconds,
                    revises=call.get("revises"),
                    reason=call.get("reason", ""),
                    confidence=call.get("confidence"),
                    risk=call.get("risk", ""),
                    task=TaskStep.of(call.get("task", state.get("task"))),
                )
                if created:
                    if self.deps.timers is not None:
                        self.deps.timers.schedule_expiry(approval.id, approval.expires_at)
                    await self.deps.port.request_approval(approval, persona)
            ids.append(approval.id)
        if await approvals.awaits_decision(self.deps.db, state["batch"]):
            interrupt({"batch": state["batch"], "approval_ids": ids})
        return {}

    async def execute(self, state: ApprovalState) -> dict[str, Any]:
        """Run what was approved, and give the persona each call's result as a tool result (a
        rollback's undos are no call of the persona's: their outcomes are shown, not handed back)."""
        key = state["channel_key"]
        outcomes: list[str] = []
        for approval in await approvals.in_batch(self.deps.db, state["batch"]):
            persona = self.deps.personas[approval.persona_id]
            call = ActionCall(call_id=approval.call_id, name=approval.action, args=approval.args)
            answer: str | None = None
            if approval.status is ApprovalStatus.APPROVED:
                answer = (
                    await self.runner.run(key, persona, call, approval_id=approval.id, thread=state["thread"])
                ).tool_answer
                approval = await approvals.get(self.deps.db, approval.id) or approval
            if approval.status in (ApprovalStatus.PENDING, ApprovalStatus.RUNNING):
                continue  # not decided, or another process is running it right now
            await self.deps.port.show_decision(approval, persona)
            if state.get("rollback"):
                continue
            result = outcome(approval, for_persona=True)
            if approval.original_args is not None:  # the persona learns what really ran
                result += f" ({approval.decided_by} edited the arguments before approving: {json.dumps(call.args)})"
            outcomes.append(result)
            # Run again after a crash, this adds a second result for the call; the prompt keeps one.
            await history.append_tool_result(
                self.deps.db, key, persona.id, ToolCall(call.call_id, call.name, call.args), with_answer(result, answer)
            )
        return {"outcomes": outcomes}

    async def follow_up(self, state: ApprovalState) -> dict[str, Any]:
        """The persona hears how its actions ended, as tool results, and finishes its turn on the
        round's own tool steps (graph/tool_steps.py): it may call more tools, or propose a revised
        call in place of a rejected one. A rollback has no follow-up: nobody asked a persona anything."""
        if state.get("rollback"):
            await batches.let_go(self.deps.db, state["batch"])
            return {"new_batches": []}
        persona = self.deps.personas[state["persona_id"]]
        key, thread = state["channel_key"], state["thread"]
        decided = await approvals.in_batch(self.deps.db, state["batch"])
        rejected = [a for a in decided if a.status is ApprovalStatus.REJECTED]
        # No human line starts a follow-up: nobody is addressed, and the review compares with nothing.
        follow = RoundInput(key, "", "", thread=thread, task=TaskStep.of(state.get("task")))
        steps = await self.tool_steps.run(follow, persona.id, rejected, earlier_calls=state.get("turn_calls", 0))
        if steps.draft.failed:
            await batches.let_go(self.deps.db, state["batch"])
            return {"new_batches": []}
        async with one_transaction(self.deps.db):
            await self.tool_steps.conclude(key, thread, persona, steps)
            await batches.let_go(self.deps.db, state["batch"])
        return {"new_batches": [steps.batch] if steps.batch else []}


def build_approval_graph(flow: ApprovalFlow, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(ApprovalState)
    graph.add_node("request", flow.request)
    graph.add_node("execute", flow.execute)
    graph.add_node("follow_up", flow.follow_up)
    graph.add_edge(START, "request")
    graph.add_edge("request", "execute")
    graph.add_edge("execute", "follow_up")
    graph.add_edge("follow_up", END)
    return graph.compile(checkpointer=checkpointer)
