"""The moderator's prompt and the parsing of its JSON decision."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graph.prompt import APP_AUTHOR_PREFIX, app_post_text, speaker_name
from graph.routing import (
    EVERYONE_SPOKE,
    FALLBACK_FINISH,
    FALLBACK_PICK,
    FINISH,
    HAS_NOT_SPOKEN,
    NOMINATED,
    ROUND_IS_FULL,
    WAS_ADDRESSED,
)
from storage.records import Line, LineKind

FACTS_PREFIX = "Facts: "
DECISION_CUE = "Decision (JSON):"  # how the embedded model's prompt ends, and each example's decision
MAX_REASON_CHARS = 160

# The reasons a model bound to fixed reasons (the embedded one) may give. A persona's reason reads
# after its name ("Sage can answer the last point"); a FINISH reason reads on its own.
CAN_ANSWER = "can answer the last point"
PICK_REASONS = (HAS_NOT_SPOKEN, CAN_ANSWER, "adds a different view", "knows this topic best")
FINISH_REASONS = (EVERYONE_SPOKE, "the question has been answered", "the people should speak next")
NAMED_REASONS = (*PICK_REASONS, WAS_ADDRESSED, NOMINATED)  # the reasons that read after a persona's name

# What a channel's own prompt (/moderate prompt, [moderation] prompt_file) replaces.
INSTRUCTIONS = (
    "You moderate a group chat between people and AI personas. After each message you decide which "
    "persona should speak next, or FINISH when the conversation has reached a natural pause and the "
    "humans should talk again. Prefer a persona who has something new to add, and finish rather than "
    "let personas repeat each other."
)
# What no custom prompt can change: the choices and the reply format.
RULES = (
    "Choose only from the choices: FINISH is among them once everyone addressed in the newest human "
    "line (or everyone, when nobody was addressed) has spoken. A choice marked as an invitation brings "
    "a persona from outside the conversation into it; choose it only when its expertise is needed. "
    'Reply with JSON only: {"next_speaker": "<one of the choices>", "reason": "<a few words>"}.'
)


def situation(addressed: Sequence[str], spoken_since_human: Sequence[str], choices: Sequence[str]) -> str:
    """The facts in one plain line, as the examples show them."""
    return (
        f"Addressed: {', '.join(addressed) or 'nobody'}. "
        f"Spoken since the human line: {', '.join(spoken_since_human) or 'nobody'}. "
        f"Choices: {', '.join(choices)}."
    )


def _example(
    conversation: str, addressed: list[str], spoken: list[str], choices: list[str], pick: str, reason: str
) -> str:
    decision = json.dumps({"next_speaker": pick, "reason": reason}, separators=(",", ":"))
    return (
        f"The conversation so far: {conversation}\n{situation(addressed, spoken, choices)}\n{DECISION_CUE} {decision}"
    )


# Three worked decisions with names that are nobody's: a small model learns the format and when to
# finish from them, rather than copying a participant's name.
EXAMPLES = "\n".join(
    [
        "Examples:",
        _example(
            "Ana: Kim, what do you think? Kim: I love it, let's do it.",
            ["Kim"],
            ["Kim"],
            ["Lee", "Max", FINISH],
            FINISH,
            FINISH_REASONS[1],
        ),
        _example("Ana: Any ideas for the weekend?", [], [], ["Kim", "Lee", "Max"], "Lee", HAS_NOT_SPOKEN),
        _example(
            "Ana: Any ideas for the weekend? Lee: Hiking. Max: A quiet day with a book. Kim: A road trip!",
            [],
            ["Lee", "Max", "Kim"],
            ["Lee", "Max", FINISH],
            FINISH,
            EVERYONE_SPOKE,
        ),
    ]
)


def decision_schema(choices: Sequence[str]) -> dict[str, Any]:
    """JSON schema for a decision: next_speaker is one of the choices (persona names, maybe FINISH)."""
    return {
        "type": "object",
        "properties": {
            "next_speaker": {"type": "string", "enum": list(choices)},
            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        },
        "required": ["next_speaker", "reason"],
        "additionalProperties": False,
    }


def fixed_reason_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """decision_schema's choices, with the reason taken from PICK_REASONS or, for FINISH, FINISH_REASONS."""
    choices = schema["properties"]["next_speaker"]["enum"]

    def branch(speakers: list[str], reasons: Sequence[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "next_speaker": {"type": "string", "enum": speakers},
                "reason": {"type": "string", "enum": list(reasons)},
            },
            "required": ["next_speaker", "reason"],
            "additionalProperties": False,
        }

    personas = [c for c in choices if c != FINISH]
    branches = ([branch(personas, PICK_REASONS)] if personas else []) + (
        [branch([FINISH], FINISH_REASONS)] if FINISH in choices else []
    )
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def shown_reason(pick_name: str, reason: str, spoken_since_human: Sequence[str]) -> str:
    """The reason as people read it: a fixed reason after the persona's name, free text clipped.

    A model that claims someone "has not spoken" who has is corrected to a reason that holds.
    """
    text = " ".join(reason.split())
    if pick_name != FINISH:
        if text == HAS_NOT_SPOKEN and pick_name in spoken_since_human:
            text = CAN_ANSWER
        if text in NAMED_REASONS:
            return f"{pick_name} {text}"
    return text[:MAX_REASON_CHARS] or "no reason given"


def invitation_reason(shown: str, pick_name: str, expertise: Sequence[str]) -> str:
    """Why an invited persona joins, as its notice says: the moderator's own words, or its
    expertise when the reason is a fixed one (which says why a persona speaks, not why it was asked in)."""
    if (shown in fixed_reasons([pick_name]) or shown == "no reason given") and expertise:
        return "its expertise in " + ", ".join(expertise)
    return shown


def fixed_reasons(persona_names: Sequence[str]) -> frozenset[str]:
    """Every reason, as shown, that comes from the fixed sets or the code's own templates."""
    named = {f"{name} {reason}" for name in persona_names for reason in NAMED_REASONS}
    return frozenset({*named, *FINISH_REASONS, ROUND_IS_FULL, FALLBACK_PICK, FALLBACK_FINISH})


def _transcript_line(line: Line, persona_names: Collection[str]) -> str:
    """One line of the moderator's transcript, on one line: no stored text can start another one
    ("\n[system] ..."), a person named like a persona is marked as a person, an app's post is its notice."""
    text = " ".join(line.text.split())
    if line.kind is LineKind.MARKER:
        return f"[system] {text}"
    if line.kind is LineKind.HUMAN:
        if line.author_id.startswith(APP_AUTHOR_PREFIX):
            return app_post_text(line.author_id, line.author_name, line.text)
        return f"{speaker_name(line.author_name, persona_names)}: {text}"
    return f"{line.author_name}: {text}"


def moderator_messages(
    lines: Sequence[Line],
    *,
    participant_names: Sequence[str],
    addressed: Sequence[str],
    spoken_since_human: Sequence[str],
    last_speaker: str | None,
    choices: Sequence[str],
    instructions: str = "",
    invitations: Mapping[str, Sequence[str]] | None = None,
) -> list[BaseMessage]:
    """The moderator's prompt: the instructions (a channel's own, or the built-in ones), the fixed
    rules, the recent transcript and the round's facts. `invitations`: name -> expertise."""
    facts: dict[str, Any] = {
        "participants": list(participant_names),
        "addressed_in_newest_human_line": list(addressed),
        "spoken_since_newest_human_line": list(spoken_since_human),
        "last_speaker": last_speaker,
        "choices": list(choices),
    }
    if invitations:
        facts["invitations"] = {name: list(topics) for name, topics in invitations.items()}
    personas = {*participant_names, *(line.author_name for line in lines if line.kind is LineKind.PERSONA)}
    transcript = "\n".join(_transcript_line(line, personas) for line in lines) or "(no messages yet)"
    return [
        SystemMessage(content=(instructions.strip() or INSTRUCTIONS) + "\n\n" + RULES + "\n\n" + EXAMPLES),
        HumanMessage(content="The conversation so far:\n" + transcript),
        HumanMessage(
            content=FACTS_PREFIX + json.dumps(facts) + "\n" + situation(addressed, spoken_since_human, choices)
        ),
    ]


CUT_OFF = "it stopped before its end, at the length limit; give a shorter reason"


def reask_messages(previous: Sequence[BaseMessage], answer: str, error: str) -> list[BaseMessage]:
    return [
        *previous,
        AIMessage(content=answer),
        HumanMessage(content=f"That decision was invalid: {error}. Decide again."),
    ]


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
