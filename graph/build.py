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
    graph.add_node("persona", round_nodes.persona)
    graph.add_node("review", round_nodes.review)
    graph.add_node("deliver", round_nodes.deliver)
    graph.add_node("skip", round_nodes.skip)
    graph.add_node("advance", round_nodes.advance)

    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", nodes.after_start, ["select", "moderator"])
    graph.add_conditional_edges("select", nodes.after_pick, {"persona": "persona", "end": END})
    graph.add_conditional_edges("moderator", nodes.after_pick, {"persona": "persona", "end": END})
    graph.add_conditional_edges("persona", nodes.after_persona, ["review", "skip"])
    graph.add_conditional_edges("review", nodes.after_review, ["persona", "deliver", "skip"])
    for finished_turn in ("deliver", "skip"):
        graph.add_conditional_edges(
            finished_turn, nodes.after_turn, {"advance": "advance", "moderator": "moderator", "end": END}
        )
    graph.add_edge("advance", "persona")
    return graph.compile(checkpointer=checkpointer)
