"""Runs rounds: one LangGraph thread per channel."""

from __future__ import annotations

from langchain_core.messages import BaseMessage
from langgraph.types import Checkpointer

from graph.build import build_round_graph
from graph.deps import EngineDeps
from graph.nodes import RoundNodes
from graph.state import RoundState, initial_state


MAX_TURNS_LIMIT = 50


def thread_id_for(channel_key: str) -> str:
    return channel_key


class RoundEngine:
    def __init__(self, deps: EngineDeps, checkpointer: Checkpointer = None) -> None:
        self.deps = deps
        self.nodes = RoundNodes(deps)
        self.graph = build_round_graph(self.nodes, checkpointer)

    async def run_round(
        self,
        channel_key: str,
        *,
        text: str,
        author_name: str,
        mentions: list[str] | None = None,
        thread: str | None = None,
    ) -> RoundState:
        state = initial_state(channel_key, text=text, author_name=author_name, mentions=mentions or [], thread=thread)
        turns = max(MAX_TURNS_LIMIT, len(self.deps.personas))
        config = {
            "configurable": {"thread_id": thread_id_for(channel_key)},
            # A turn is at most persona/review three times, then deliver or skip, advance, moderator.
            "recursion_limit": 20 + 10 * turns,
        }
        return await self.graph.ainvoke(state, config)

    async def prompt_for(self, channel_key: str, persona_id: str) -> list[BaseMessage]:
        return await self.nodes.persona_prompt(channel_key, self.deps.personas[persona_id])
