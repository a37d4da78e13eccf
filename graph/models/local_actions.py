"""The embedded model's action step: a base model has no native tool calls, so it decides
`{"action": "none"}` or `{"action": NAME, ...args, "confidence": 0.9}` under a JSON schema that
llama.cpp enforces.

It runs only for a persona that has actions and was addressed by the human line. The schema, the
prompt and the few-shot lines are built here from the pydantic argument models in graph/actions.py;
what the model proposes is then a tool call like any other provider's, so it still goes through
`check_call` and the approval policy.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from graph.actions import ACTIONS, CONFIDENCE
from graph.mcp import McpTool
from graph.models.grounding import grounded, grounded_values, sent_by_the_addressee, snap_to_quote

NO_ACTION = "none"
DECISION_CUE = "Action (JSON):"

# Few-shot lines in the transcript: requests with their arguments, and look-alike chit-chat that
# mentions posting or messaging without asking for it. None of them is in the benchmark set.
_EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "Mia: {name}, post 'Tickets are sold out' in #tickets",
        {"action": "publish_post", "channel": "tickets", "text": "Tickets are sold out", "confidence": 0.9},
    ),
    ("Mia: {name}, did you read the post in #updates?", {"action": NO_ACTION}),
    (
        "Leo: {name}, DM Zoe that the server is back",
        {"action": "send_message", "to": "Zoe", "text": "The server is back", "confidence": 0.8},
    ),
    ("Leo: {name}, I messaged Zoe already, thanks.", {"action": NO_ACTION}),
    # A request whose action ran already this turn: its result is there, nothing more to do.
    ("Mia: {name}, DM Zoe that lunch is ready\n[system] send_message: executed: sent to Zoe", {"action": NO_ACTION}),
    (
        "Mia: {name}, schedule 'Quiz night starts' in #fun for 2026-03-05T19:00:00+00:00",
        {
            "action": "schedule_post",
            "at": "2026-03-05T19:00:00+00:00",
            "channel": "fun",
            "text": "Quiz night starts",
            "confidence": 0.9,
        },
    ),
    ("Leo: {name}, how are you today?", {"action": NO_ACTION}),
    (
        "Mia: {name}, maybe send Max a message: 'Call me back'",
        {"action": "send_message", "to": "Max", "text": "Call me back", "confidence": 0.5},
    ),
    ("Mia: {name}, should we post something about the outage?", {"action": NO_ACTION}),
    (
        "Leo: {name}, publish 'New blog post is up' in #blog",
        {"action": "publish_post", "channel": "blog", "text": "New blog post is up", "confidence": 1.0},
    ),
    ("Leo: {name}, what a nice day.", {"action": NO_ACTION}),
    # note_to goes to another persona present: Juno, Otto, Kai and Ivy stand for them here.
    (
        "Mia: {name}, send Juno a note that the train is late",
        {"action": "note_to", "persona": "Juno", "text": "The train is late", "confidence": 0.9},
    ),
    ("Leo: {name}, did Juno read your note?", {"action": NO_ACTION}),
    (
        "Leo: {name}, leave Otto a note: 'Budget is approved'",
        {"action": "note_to", "persona": "Otto", "text": "Budget is approved", "confidence": 1.0},
    ),
    (
        "Mia: {name}, tell Kai privately that the client called",
        {"action": "note_to", "persona": "Kai", "text": "The client called", "confidence": 0.9},
    ),
    ("Mia: {name}, what did Kai say?", {"action": NO_ACTION}),
    (
        "Leo: {name}, pass Ivy a note saying 'Review is done'",
        {"action": "note_to", "persona": "Ivy", "text": "Review is done", "confidence": 0.9},
    ),
    # remember keeps a note for the persona itself.
    (
        "Mia: {name}, remember that the venue is Hall B",
        {"action": "remember", "text": "The venue is Hall B", "confidence": 0.9},
    ),
    ("Leo: {name}, do you remember the venue?", {"action": NO_ACTION}),
    (
        "Leo: {name}, don't forget: 'Ana is vegetarian'",
        {"action": "remember", "text": "Ana is vegetarian", "confidence": 1.0},
    ),
)

# How sure the model is that the person asked for this call, in tenths: a 270M model writes a
# listed value far more reliably than it respects a numeric range.
CONFIDENCE_STEPS = tuple(round(step / 10, 1) for step in range(11))


OfferedTools = Sequence[tuple[str, McpTool]]
"""MCP tools offered to the embedded model: (the name it uses, the tool)."""

_SIMPLE_TYPES = ("string", "integer", "number", "boolean")
_SAMPLE_VALUES = ("Blue", "Sky", "Tuesday", "Harbor")  # example arguments in the synthesized few-shot lines


def grammar_properties(schema: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]] | None:
    """A tool's input schema in what constrained decoding takes reliably: properties of a plain type
    (string, integer, number, boolean; an enum kept). An optional property of another shape is left
    out (the model never fills it); a required one means the tool is not offered to the embedded
    model at all (None). check_call still checks the call against the tool's whole schema."""
    properties: dict[str, dict[str, Any]] = {}
    required = [str(r) for r in schema.get("required", [])]
    for name, field_schema in (schema.get("properties") or {}).items():
        kind = field_schema.get("type") if isinstance(field_schema, dict) else None
        if kind in _SIMPLE_TYPES:
            kept = {"type": kind, **({"enum": field_schema["enum"]} if "enum" in field_schema else {})}
            properties[str(name)] = kept
        elif name in required:
            return None
    return properties, [r for r in required if r in properties]


def decision_schema(actions: Sequence[str], tools: OfferedTools = (), full: bool = False) -> dict[str, Any]:
    """One object per allowed action and offered MCP tool, told apart by a constant `action` and
    ending with the model's `confidence`, plus `{"action": "none"}`. With `full` (an instruct model)
    every tool is offered with its real input schema; otherwise only what grammar_properties keeps."""
    options: list[dict[str, Any]] = [
        {"type": "object", "properties": {"action": {"const": NO_ACTION}}, "required": ["action"]}
    ]
    definitions: dict[str, Any] = {}
    for exposed, tool in offered_tools(tools, full):
        fields, needed = tool_fields(tool, full)
        if full:
            definitions.update(tool.input_schema.get("$defs") or {})
        shaped = {"action": {"const": exposed}, **fields, CONFIDENCE: {"enum": list(CONFIDENCE_STEPS)}}
        options.append({"type": "object", "properties": shaped, "required": ["action", *needed, CONFIDENCE]})
    for name in actions:
        if name not in ACTIONS:
            continue
        args = ACTIONS[name].model_json_schema()
        properties: dict[str, dict[str, Any]] = {"action": {"const": name}}
        properties.update({key: _plain(value) for key, value in args["properties"].items()})
        properties[CONFIDENCE] = {"enum": list(CONFIDENCE_STEPS)}  # last: stated once the call is written
        required = ["action", *args.get("required", []), CONFIDENCE]
        options.append({"type": "object", "properties": properties, "required": required})
    return {"anyOf": options, **({"$defs": definitions} if definitions else {})}


def offered_tools(tools: OfferedTools, full: bool) -> list[tuple[str, McpTool]]:
    """The tools the model is offered: all of them (full), or those grammar_properties can shape."""
    return [(exposed, tool) for exposed, tool in tools if full or grammar_properties(tool.input_schema) is not None]


def tool_fields(tool: McpTool, full: bool) -> tuple[dict[str, Any], list[str]]:
    """A tool's argument properties and required names: its real schema's (full), or the plain ones."""
    if full:
        schema = tool.input_schema
        return dict(schema.get("properties") or {}), [str(name) for name in schema.get("required", [])]
    shape = grammar_properties(tool.input_schema)
    return shape if shape is not None else ({}, [])


def _plain(field: dict[str, Any]) -> dict[str, Any]:
    """A field schema without the annotations a grammar does not need."""
    return {key: value for key, value in field.items() if key not in ("title", "description", "maxLength")}


def newest_human_line(messages: Sequence[BaseMessage]) -> str | None:
    """The newest line a person wrote ("Ana: ..."): the one that addressed the persona."""
    for message in reversed(messages):
        if _from_a_person(message):
            return " ".join(message.text.split())
    return None


def _from_a_person(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and not message.text.startswith("[")


Made = tuple[str, dict[str, Any], str]
"""A call the persona made since the person's line: (the name it used, its arguments, its result)."""


def made_since_the_line(messages: Sequence[BaseMessage]) -> list[Made]:
    """The tool calls of this turn so far (after the newest person's line), each with its result."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if _from_a_person(messages[i])), None)
    if start is None:
        return []
    later = messages[start + 1 :]
    results = {m.tool_call_id: " ".join(m.text.split()) for m in later if isinstance(m, ToolMessage)}
    return [
        (call["name"], _without_confidence(call["args"]), results.get(call["id"] or "", ""))
        for m in later
        if isinstance(m, AIMessage)
        for call in m.tool_calls
    ]


def _without_confidence(args: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in args.items() if key != CONFIDENCE}


def asked_again(call: Mapping[str, Any], made: Sequence[Made]) -> bool:
    """Whether a proposal repeats a call this turn made already: its result is in the transcript, so
    the action step's answer is the reply step's to give (a 270M model proposes the same call again
    for the same line)."""
    return any(call["name"] == name and _without_confidence(call["args"]) == args for name, args, _ in made)


def decision_prompt(
    line: str,
    speaker: str,
    actions: Sequence[str],
    now: datetime,
    tools: OfferedTools = (),
    made: Sequence[Made] = (),
    full: bool = False,
    read_only: Sequence[str] = (),
    max_chars: int | None = None,
) -> str | None:
    """A few-shot prompt: what each action is, then example lines with their decisions, then `line`
    and the results of the calls this turn made already (one "[system] NAME: result" line each).
    `read_only`: the offered tools our config says only read; a question they answer asks for them.
    `max_chars`: the most the prompt may hold (a small context window): the last examples are left
    out until it fits; None when it does not fit even without them."""
    offered = offered_tools(tools, full)
    reading = [exposed for exposed, _ in offered if exposed in read_only]
    described = "\n".join(
        [
            *(f"- {name}: {' '.join((ACTIONS[name].__doc__ or '').split())}" for name in actions if name in ACTIONS),
            *(
                f"- {exposed}({', '.join(tool_fields(tool, full)[0])}){' (only reads)' if exposed in reading else ''}: "
                f"{' '.join((tool.description or exposed).split())}"
                for exposed, tool in offered
            ),
        ]
    )
    lookups = (
        f"A question about what {' or '.join(reading)} would look up asks for it: to answer, {speaker} reads it first. "
        if reading
        else ""
    )
    shown = [*_EXAMPLES, *(example for exposed, tool in offered for example in _tool_examples(exposed, tool))]
    examples = [
        f"{text.format(name=speaker)}\n{DECISION_CUE} {json.dumps(decision, separators=(',', ':'))}"
        for text, decision in shown
        if decision["action"] in (NO_ACTION, *actions, *(exposed for exposed, _ in offered))
    ]
    opening = (
        f"{speaker} can take these actions:\n{described}\n"
        f"For each message, decide whether it asks {speaker} to take one of these actions now. "
        'If it does not clearly ask for one, the answer is {"action":"none"}. '
        + lookups
        + "An action ends with its confidence: how sure you are, from 0 to 1, that the message asks for it. "
        f"Now is {now.isoformat(timespec='minutes')}.\n\n"
    )
    closing = f"\n\n{line}\n" + "".join(f"[system] {name}: {result}\n" for name, _, result in made) + DECISION_CUE
    while True:
        prompt = opening + "\n\n".join(examples) + closing
        if max_chars is None or len(prompt) <= max_chars:
            return prompt
        if not examples:
            return None
        examples.pop()


def tool_call_from(decision_text: str, line: str, speaker: str = "") -> dict[str, Any] | None:
    """The LangChain tool call a decision asks for, or None for `{"action": "none"}` and for a
    proposal that is not grounded in the line that asked for it."""
    decision = json.loads(decision_text)
    name = decision.pop("action", NO_ACTION) if isinstance(decision, dict) else NO_ACTION
    if name != NO_ACTION and name not in ACTIONS:  # an MCP tool: every text it would send is in the line
        return _call(name, decision) if grounded_values(decision, line) else None
    if name == NO_ACTION or not grounded(decision, line) or not sent_by_the_addressee(decision, line, speaker):
        return None
    if isinstance(decision.get("text"), str):
        decision["text"] = snap_to_quote(decision["text"], line)
    return _call(name, decision)


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:16]}", "type": "tool_call"}


def _tool_examples(exposed: str, tool: McpTool) -> list[tuple[str, dict[str, Any]]]:
    """A request for the tool and a look-alike line that asks nothing, made from its schema: a base
    model copies the pattern (quoted words into the arguments) rather than the words themselves."""
    shape = grammar_properties(tool.input_schema)
    if shape is None:
        return []
    fields, needed = shape
    args: dict[str, Any] = {}
    said: list[str] = []
    for index, key in enumerate(needed):
        kind = fields[key].get("type")
        value: Any = fields[key]["enum"][0] if "enum" in fields[key] else _SAMPLE_VALUES[index % len(_SAMPLE_VALUES)]
        if kind in ("integer", "number"):
            value = 3
        elif kind == "boolean":
            value = True
        args[key] = value
        said.append(
            f"{key.replace('_', ' ')} '{value}'" if isinstance(value, str) else f"{key.replace('_', ' ')} {value}"
        )
    words = exposed.replace("_", " ")
    request = f"Mia: {{name}}, {words}" + (f" with {' and '.join(said)}" if said else "")
    return [
        (request, {"action": exposed, **args, CONFIDENCE: 0.9}),
        (f"Leo: {{name}}, do you know what {words} does?", {"action": NO_ACTION}),
    ]
