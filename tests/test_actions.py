"""The pure parts of persona actions: tool definitions, call/result pairing, revisions, and the
embedded model's decision schema and grounding."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from graph.actions import ACTIONS, check_call, tool_definitions
from graph.models.grounding import grounded, snap_to_quote
from graph.models.local import bounded_schema
from graph.models.local_actions import decision_schema, tool_call_from
from graph.policy import revision_of
from graph.prompt import NO_RESULT_YET, pair_tool_results
from personas import load_personas
from storage.records import Approval, ApprovalStatus


def test_tool_definitions_come_from_the_argument_models() -> None:
    [publish] = tool_definitions(["publish_post"])
    function = publish["function"]
    assert function["name"] == "publish_post"
    assert function["description"].startswith("Publish a post in a channel")
    assert function["parameters"]["required"] == ["channel", "text"]
    # The arguments, and the confidence every call may state for the approval policy.
    assert set(function["parameters"]["properties"]) == {*ACTIONS["publish_post"].model_fields, "confidence"}
    assert "confidence" not in function["parameters"]["required"]
    assert tool_definitions([]) == [] and tool_definitions(["launch_rocket"]) == []


def test_a_hash_before_a_channel_name_is_dropped() -> None:
    nova = load_personas()["nova"]
    call = check_call(nova, "c1", "publish_post", {"channel": " #news", "text": "Hi"})
    assert not isinstance(call, str) and call.args == {"channel": "news", "text": "Hi"}


def call(call_id: str) -> dict[str, object]:
    return {"name": "publish_post", "args": {"channel": "news", "text": "x"}, "id": call_id, "type": "tool_call"}


def test_results_move_up_to_their_calls_and_nothing_is_left_unpaired() -> None:
    messages = [
        SystemMessage(content="system"),
        ToolMessage(content="executed", tool_call_id="gone", name="publish_post"),  # its call fell out of the window
        AIMessage(content="On it.", tool_calls=[call("a"), call("b")]),
        HumanMessage(content="Ana: thanks"),
        ToolMessage(content="Rejected by Bea: no", tool_call_id="b", name="publish_post"),
    ]
    paired = pair_tool_results(messages)
    shape = [(type(m).__name__, m.text if not isinstance(m, ToolMessage) else (m.tool_call_id, m.text)) for m in paired]
    assert shape == [
        ("SystemMessage", "system"),
        ("HumanMessage", "[system] publish_post: executed"),
        ("AIMessage", "On it."),
        ("ToolMessage", ("a", NO_RESULT_YET)),
        ("ToolMessage", ("b", "Rejected by Bea: no")),
        ("HumanMessage", "Ana: thanks"),
    ]


def approval(approval_id: int, action: str) -> Approval:
    return Approval(
        approval_id,
        "b",
        f"c{approval_id}",
        "k",
        None,
        "nova",
        action,
        {},
        ApprovalStatus.REJECTED,
        0.0,
        0.0,
        "Bea",
        0.0,
        "no",
        False,
        None,
    )


def test_a_revision_names_the_rejected_proposal_of_the_same_action() -> None:
    rejected = [approval(3, "send_message"), approval(4, "publish_post")]
    assert revision_of("send_message", rejected) == 3
    assert revision_of("publish_post", rejected) == 4
    assert revision_of("schedule_post", rejected) == 4  # nothing of that kind: the last rejected
    assert revision_of("publish_post", []) is None


def test_the_decision_schema_allows_none_or_one_of_the_personas_actions() -> None:
    schema = bounded_schema(decision_schema(["publish_post", "send_message"]))
    actions = [option["properties"]["action"]["const"] for option in schema["anyOf"]]
    assert actions == ["none", "publish_post", "send_message"]
    publish = schema["anyOf"][1]
    assert (
        publish["required"] == ["action", "channel", "text", "confidence"] and publish["additionalProperties"] is False
    )
    assert publish["properties"]["confidence"] == {"enum": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}


LINE = "Ana: Nova, post 'Doors open at 9!' in #news"


def test_a_grounded_proposal_becomes_a_tool_call_with_the_quoted_text() -> None:
    decision = json.dumps({"action": "publish_post", "channel": "news", "text": "Doors open at 9"})
    made = tool_call_from(decision, LINE)
    assert made is not None and made["name"] == "publish_post"
    assert made["args"] == {"channel": "news", "text": "Doors open at 9!"}
    assert tool_call_from('{"action": "none"}', LINE) is None


def test_proposals_not_found_in_the_line_are_dropped() -> None:
    assert not grounded({"channel": "events", "text": "Doors open at 9"}, LINE)  # a channel nobody named
    assert not grounded({"channel": "news", "text": "Tickets are sold out"}, LINE)  # text nobody wrote
    assert not grounded({"to": "Zoe", "text": "Doors open at 9"}, LINE)  # a recipient nobody named
    echo = "Ben: Nova, good morning!"
    assert not grounded({"channel": "general", "text": "Good morning"}, echo)  # the line echoed back
    assert grounded({"to": "Ana", "text": "The build is green"}, "Ben: Nova, DM Ana that the build is green")


def test_a_channel_is_found_only_where_the_line_names_a_channel() -> None:
    # The embedded model proposed exactly this in the quality bench: every word is in the line,
    # but "the launch" is no channel.
    headline = "Ana: Nova, give me a one-line headline for the launch."
    decision = json.dumps({"action": "publish_post", "channel": "launch", "text": "Launch", "confidence": 0.9})
    assert tool_call_from(decision, headline) is None
    assert tool_call_from(decision, "Ana: Nova, post 'Launch' in #launch") is not None
    assert tool_call_from(decision, "Ana: Nova, post 'Launch' in <#C0LAUNCH|launch>") is not None
    hashed = json.dumps({"action": "publish_post", "channel": "#launch", "text": "Launch", "confidence": 0.9})
    assert tool_call_from(hashed, "Ana: Nova, post 'Launch' in #launch") is not None


def test_snapping_keeps_the_persons_own_punctuation() -> None:
    assert snap_to_quote("Welcome aboard", "Ana: Nova, DM Gus 'Welcome aboard!'") == "Welcome aboard!"
    assert snap_to_quote("Something else", "Ana: Nova, DM Gus 'Welcome aboard!'") == "Something else"


def test_an_embedded_models_tool_arguments_are_grounded_as_whole_values() -> None:
    decision = '{"action": "get_current_time", "timezone": "%s", "confidence": 0.9}'
    line = "Ana: Rex, what time is it in America/New_York?"
    assert tool_call_from(decision % "New_York", line) is None  # a piece of a value is not the value
    call = tool_call_from(decision % "America/New_York", line)
    assert call is not None and call["args"]["timezone"] == "America/New_York"
    assert tool_call_from(decision % "Berlin", "Ana: Rex, the time in 'Berlin' please") is not None
