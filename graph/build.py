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
    graph.add_node("select", round_nodes.select)
    graph.add_node("moderator", round_nodes.moderator)
    graph.add_node("advance", round_nodes.advance)

    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", nodes.after_start, ["select", "moderator"])
    # select, moderator and advance each pick a speaker and run its whole turn (draft, review,
    # deliver or skip) in one step: LangGraph's work per step is a large share of a turn.
    for picks_and_turns in ("select", "moderator", "advance"):
        graph.add_conditional_edges(
            picks_and_turns, nodes.after_turn, {"advance": "advance", "moderator": "moderator", "end": END}
        )
    return graph.compile(checkpointer=checkpointer)
