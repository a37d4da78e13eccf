"""The round as a LangGraph StateGraph."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graph import nodes
from graph.nodes import RoundNodes
from graph.state import RoundState


def build_round_graph(round_nodes: RoundNodes, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(RoundState)
    graph.add_node("start", round_nodes.start)
    graph.add_node("moderator", round_nodes.moderator)
    graph.add_node("advance", round_nodes.advance)

    graph.add_edge(START, "start")
    # Each step picks a speaker and runs its whole turn (draft, review, deliver or skip): LangGraph's
    # work per step is a large share of a turn. start also reads the round's settings and makes the
    # first pick (the moderator's, or the unmoderated order's).
    for picks_and_turns in ("start", "moderator", "advance"):
        graph.add_conditional_edges(
            picks_and_turns, nodes.after_turn, {"advance": "advance", "moderator": "moderator", "end": END}
        )
    return graph.compile(checkpointer=checkpointer)
