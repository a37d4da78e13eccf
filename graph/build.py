"""The round as a LangGraph StateGraph."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graph.nodes import RoundNodes
from graph.state import RoundState


def build_round_graph(round_nodes: RoundNodes, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(RoundState)
    # Each step picks a speaker and runs its whole turn (draft, review, deliver or skip), and says
    # where the round goes next (graph.nodes.onward): LangGraph's work per step is a large share of
    # a turn. start also reads the round's settings and makes the first pick (the moderator's, or
    # the unmoderated order's).
    onward = ("advance", "moderator", END)
    graph.add_node("start", round_nodes.start, destinations=onward)
    graph.add_node("moderator", round_nodes.moderator, destinations=onward)
    graph.add_node("advance", round_nodes.advance, destinations=onward)
    graph.add_edge(START, "start")
    return graph.compile(checkpointer=checkpointer)
