"""Runs rounds (one LangGraph run each; a round cut by a crash goes on from storage.rounds),
approval flows (a checkpointed thread per batch) and tasks (graph/task_runner.py)."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Checkpointer, Command

from graph import tracing
from graph.action_runner import ActionRunner
from graph.actions import ActionCall
from graph.approval_flow import ApprovalFlow, build_approval_graph, outcome, with_answer
from graph.build import build_round_graph
from graph.deps import EngineDeps
from graph.mailbox import Mailbox
from graph.memory import MemoryKeeper, Notebook
from graph.nodes import RoundNodes
from graph.observe import ROUNDS
from graph.state import Floor, RoundInput, RoundState, initial_state
from graph.task_runner import TaskRunner
from storage import approvals, channels, history
from storage import batches as held_batches
from storage.records import Approval, ToolCall

Batch = dict[str, Any]


MAX_TURNS_LIMIT = 50


class RoundEngine:
    def __init__(self, deps: EngineDeps, checkpointer: Checkpointer = None) -> None:
        self.deps = deps
        mailbox = Mailbox(deps.db, deps.personas, deps.settings.mailbox_max_pending)
        notebook = Notebook(deps.db, deps.port, deps.settings.memory)
        self.runner = ActionRunner(
            deps.db,
            deps.port,
            deps.timers,
            deps.policy,
            mailbox=mailbox,
            notebook=notebook,
            tools=deps.tools,
            mcp=deps.mcp,
        )
        self.nodes = RoundNodes(deps, self.runner)
        self.memory = MemoryKeeper(deps, self.nodes.prompts)
        # No checkpointer for rounds: a round cut by a crash goes on from the state its last turn
        # committed together with its lines and posts (storage.rounds), which a checkpoint in
        # another transaction could not promise. initial_state sets every key.
        self.graph = build_round_graph(self.nodes)
        self.approval_graph = build_approval_graph(ApprovalFlow(deps, self.runner, self.nodes.tool_steps), checkpointer)
        self.tasks = TaskRunner(deps, self.nodes, checkpointer, self.start_approvals)

    async def run_round(
        self,
        channel_key: str,
        *,
        text: str,
        author_name: str,
        mentions: list[str] | None = None,
        thread: str | None = None,
        saved: dict[str, Any] | None = None,
    ) -> list[Batch]:
        """Run one round, or run on a round cut by a crash from its `saved` state (storage.rounds);
        returns the action batches that now wait for approval (see start_approvals)."""
        ROUNDS.inc()
        state = initial_state(RoundInput(channel_key, text, author_name, tuple(mentions or ()), thread))
        if saved is not None and "floor" in saved:
            floor: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in saved["floor"].items()}
            state = RoundState(round=state["round"], floor=Floor(**floor), turn=None, batches=list(saved["batches"]))
        turns = max(MAX_TURNS_LIMIT, len(self.deps.personas))
        # A turn is one step (its drafts, reviews and delivery), then advance or moderator. No thread
        # id: without a checkpointer there is no thread to name, and LangGraph's start is the cheaper.
        config: RunnableConfig = {"recursion_limit": 20 + 10 * turns}
        tracing.round_id.set(uuid.uuid4().hex[:12])
        with tracing.agent_span(tracing.AGENT_NAME, channel_key):
            final = await self.graph.ainvoke(state, config)
        if final["floor"].decisions:
            await channels.set_last_decisions(self.deps.db, channel_key, final["floor"].decisions)
        return final["batches"]

    async def start_approvals(self, batches: list[Batch]) -> None:
        """Start each batch's approval flow in its own thread; it stops at the interrupt. A batch
        whose flow has begun already (a round or step run on after a stop returns it again) is
        left to its flow: its requests are out, and its decisions resume it."""
        while batches:
            batch = batches.pop(0)
            config: RunnableConfig = {"configurable": {"thread_id": batch["batch"]}}
            if (await self.approval_graph.aget_state(config)).values:
                continue
            result = await self.approval_graph.ainvoke(
                {**batch, "outcomes": [], "new_batches": []},
                config,
                durability="sync",  # an approval shown to people must survive a crash right after
            )
            batches.extend(result.get("new_batches", []) if "__interrupt__" not in result else [])

    async def resume_approvals(self, batch_id: str) -> None:
        """Continue a batch once every approval in it is decided; the flow reads the decisions from
        storage. A batch held (storage.batches) whose flow a stop kept from starting starts now."""
        config: RunnableConfig = {"configurable": {"thread_id": batch_id}}
        snapshot = await self.approval_graph.aget_state(config)
        if not snapshot.values:
            held = await held_batches.held(self.deps.db, batch_id)
            await self.start_approvals([held] if held else [])
            return
        if not snapshot.next:
            # Already finished: a second resume must not execute anything twice. The batches its
            # follow-up left (each held) start, unless they have.
            await self.start_approvals(list(snapshot.values.get("new_batches", [])))
            return
        if snapshot.interrupts and await approvals.awaits_decision(self.deps.db, batch_id):
            # A resume queued before the flow asked (start-up's, for a held batch): passing the
            # interrupt now would end the flow with nothing run, and the decision to come find it over.
            return
        # Killed before the interrupt was saved, the flow simply continues from its last checkpoint.
        resume: Command[Any] | None = Command(resume={"decided": True}) if snapshot.interrupts else None
        result = await self.approval_graph.ainvoke(resume, config, durability="sync")
        await self.start_approvals(list(result.get("new_batches", [])))

    async def run_approved(self, approval_id: int) -> None:
        """Run one approved action outside its batch's flow (an approver's retry), show how it
        ended and give the persona the result."""
        approval = await approvals.get(self.deps.db, approval_id)
        persona = self.deps.personas.get(approval.persona_id) if approval else None
        if approval is None or persona is None:
            return
        call = ActionCall(call_id=approval.call_id, name=approval.action, args=approval.args)
        ran = await self.runner.run(approval.channel_key, persona, call, approval_id=approval.id)
        finished = await approvals.get(self.deps.db, approval_id)
        if finished is not None:
            await self.show_outcome(finished, ran.tool_answer)

    async def show_outcome(self, approval: Approval, answer: str | None = None) -> None:
        """Show a decided approval's outcome and hand it to its persona as the call's result
        (the newest result for a call is the one its prompt keeps)."""
        persona = self.deps.personas.get(approval.persona_id)
        if persona is None:
            return
        await self.deps.port.show_decision(approval, persona)
        call = ToolCall(approval.call_id, approval.action, approval.args)
        result = with_answer(outcome(approval, for_persona=True), answer)
        await history.append_tool_result(self.deps.db, approval.channel_key, persona.id, call, result)

    async def prompt_for(self, channel_key: str, persona_id: str) -> list[BaseMessage]:
        return await self.nodes.prompts.persona_prompt(channel_key, self.deps.personas[persona_id])
