"""The moderator's prompt and the parsing of its JSON decision."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graph.routing import FINISH
from storage.records import Line, LineKind

FACTS_PREFIX = "Facts: "

INSTRUCTIONS = (
    "You moderate a group chat between people and AI personas. After each message you decide which "
    "persona should speak next, or FINISH when the conversation has reached a natural pause and the "
    "humans should talk again. Prefer a persona who has something new to add, never let one persona "
    "answer itself, and finish rather than let personas repeat each other. Reply with JSON only: "
    '{"next_speaker": "<persona name or FINISH>", "reason": "<one short sentence>"}.'
)


def decision_schema(choices: Sequence[str]) -> dict[str, Any]:
    """JSON schema for a decision; next_speaker is limited to the participants and FINISH."""
    return {
        "type": "object",
        "properties": {
            "next_speaker": {"type": "string", "enum": [*choices, FINISH]},
            "reason": {"type": "string", "maxLength": 160},
        },
        "required": ["next_speaker", "reason"],
        "additionalProperties": False,
    }


def _transcript_line(line: Line) -> str:
    if line.kind is LineKind.MARKER:
        return f"[system] {line.text}"
    return f"{line.author_name}: {line.text}"


def moderator_messages(
    lines: Sequence[Line],
    participant_names: Sequence[str],
    last_speaker: str | None,
    spoken_since_human: Sequence[str],
) -> list[BaseMessage]:
    facts = {
        "participants": list(participant_names),
        "last_speaker": last_speaker,
        "spoken_since_newest_human_line": list(spoken_since_human),
    }
    transcript = "\n".join(_transcript_line(line) for line in lines) or "(no messages yet)"
    return [
        SystemMessage(content=INSTRUCTIONS),
        HumanMessage(content="The conversation so far:\n" + transcript),
        HumanMessage(content=FACTS_PREFIX + json.dumps(facts) + "\nWho speaks next?"),
    ]


def reask_messages(previous: Sequence[BaseMessage], answer: str, error: str) -> list[BaseMessage]:
    return [*previous, AIMessage(content=answer), HumanMessage(content=f"That decision was invalid: {error}. Decide again.")]


def parse_decision(text: str) -> tuple[str, str] | str:
    """(next_speaker, reason), or an error describing what was wrong with the text."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return "the answer was not a JSON object"
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        return f"the answer was not valid JSON ({exc.msg})"
    if not isinstance(data, dict) or not isinstance(data.get("next_speaker"), str):
        return 'the JSON object had no string "next_speaker"'
    reason = data.get("reason")
    return data["next_speaker"], reason if isinstance(reason, str) else ""


def read_facts(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The facts block of a moderator prompt (used by the scripted double)."""
    for message in reversed(messages):
        content = str(message.content)
        if content.startswith(FACTS_PREFIX):
            return json.loads(content[len(FACTS_PREFIX) :].split("\n", 1)[0])
    raise ValueError("no facts block in the moderator prompt")
