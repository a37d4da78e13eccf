"""Chat-template and tool-call syntax that a model wrote as text: pure functions.

Small models behind OpenAI-compatible servers often write their tool call into the reply's content
instead of `tool_calls`. llama.cpp's server (llama-server, docs/function-calling.md: "If tool calls
come back as plain assistant text ...") parses Qwen 2.5 and Hermes replies with
`common_chat_parse_hermes_2_pro` (common/chat.cpp), which reads a call as `{"name": ..., "arguments":
...}` optionally wrapped in ```` ```json ````/```` ```xml ```` and one of `<tool_call>`,
`<function_call>`, `<tool>`, `<tools>`, `<response>`, `<json>`, `<xml>`, `<JSON>`, or as
`<function=NAME>{args}</function>` / `<function name="NAME">`; when that parse fails on a finished
reply, `common_chat_parse` clears the calls and returns the whole output as content, template tags
included. Llama 3.x writes `{"name": ..., "parameters": ...}`, Mistral Nemo `[TOOL_CALLS][{...}]`, and
llama.cpp's generic format `{"tool_call": {...}}` or `{"tool_calls": [...]}` (the same page).

`read_written_calls` turns such text into the calls it holds and the words around them;
`template_syntax` finds whatever template or tool syntax is left, which the review never posts.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

_DECODER = json.JSONDecoder()
_WRAPPER_TAGS = "tool_call|function_call|tool|tools|response|json|xml"
# What may stand before a written call: a fence, an opening tag, Mistral's marker.
_OPENING = re.compile(rf"(?:```(?:json|xml)?\s*)?(?:<(?:{_WRAPPER_TAGS})>\s*)?(?:\[TOOL_CALLS\]\s*)?\Z", re.IGNORECASE)
_CLOSING = re.compile(rf"\s*(?:</(?:{_WRAPPER_TAGS}|function)>\s*)?(?:```)?", re.IGNORECASE)
_NAMED_FUNCTION = re.compile(r"<function(?:=([^>\s]+)| name=\"([^\"]+)\")>\s*")
_CALL_START = re.compile(r"[{\[]|<function[= ]")
# Template and tool syntax no chat line holds: special tokens (<|im_start|>, <|eot_id|>), Gemma's
# turn markers, Hermes/Qwen tool tags, Mistral's [INST] and [TOOL_CALLS], a "[tools]" label (Qwen2.5
# behind llama.cpp wrote "[tools] send_message(to=...)" as its reply), a fenced JSON or XML block,
# and a bare object that opens with "name" (a call that did not parse).
_TEMPLATE = re.compile(
    r"<\|[A-Za-z0-9_]+\|>"
    r"|</?(?:start_of_turn|end_of_turn|tool_call|tool_response|tools?|function_call|think)>"
    r"|<function(?:=| name=)|</function>"
    r"|\[/?(?:INST|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|tools?)\]"
    r"|```(?:json|xml)\b"
    r"|\{\s*\"name\"\s*:",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class WrittenCalls:
    text: str  # the words around the calls
    calls: tuple[dict[str, Any], ...]  # each {"name", "args"}


def template_syntax(text: str) -> str | None:
    """The first piece of chat-template or tool syntax in the text, if any."""
    found = _TEMPLATE.search(text)
    return found.group(0) if found else None


def read_written_calls(text: str) -> WrittenCalls:
    """The tool calls written in the text, and the text without them (and without their wrappers)."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    done = 0  # the text before this is kept or read
    search_from = 0
    while (start := _CALL_START.search(text, search_from)) is not None:
        found = _call_at(text, start.start())
        if found is None:
            search_from = start.start() + 1
            continue
        end, read = found
        opening = _OPENING.search(text[done : start.start()])
        begin = done + opening.start() if opening else start.start()
        closing = _CLOSING.match(text, end)
        end = closing.end() if closing else end
        kept.append(text[done:begin])
        calls += read
        done = search_from = end
    if not calls:
        return WrittenCalls(text, ())
    kept.append(text[done:])
    words = " ".join(piece.strip() for piece in kept if piece.strip())
    return WrittenCalls(words, tuple(calls))


def _call_at(text: str, at: int) -> tuple[int, list[dict[str, Any]]] | None:
    """Where the call(s) written at `at` end, and what they are; None when no call starts there."""
    named = _NAMED_FUNCTION.match(text, at)
    if named is not None:
        arguments = _json_at(text, named.end())
        if arguments is None or not isinstance(arguments[0], dict):
            return None
        return arguments[1], [{"name": named.group(1) or named.group(2), "args": arguments[0]}]
    value = _json_at(text, at)
    if value is None:
        return None
    calls = _calls_in(value[0])
    return (value[1], calls) if calls else None


def _json_at(text: str, at: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, at)
    except json.JSONDecodeError:
        return None


def _calls_in(value: Any) -> list[dict[str, Any]]:
    """The calls a JSON value states: a call object, a list of them, or one wrapped in "tool_call",
    "tool_calls" or OpenAI's "function"."""
    if isinstance(value, list):
        found = [_call_of(item) for item in value]
        return [call for call in found if call is not None] if all(found) else []
    if isinstance(value, dict):
        for wrapper in ("tool_calls", "tool_call", "function"):
            if wrapper in value and len(value) <= 3:
                return _calls_in(value[wrapper])
    call = _call_of(value)
    return [call] if call else []


def _call_of(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"].strip():
        return None
    if "function" in value and isinstance(value["function"], dict):
        return _call_of(value["function"])
    arguments = value.get("arguments", value.get("parameters"))
    if arguments is None or not set(value) <= {"name", "arguments", "parameters", "id", "type"}:
        return None
    if isinstance(arguments, str):  # OpenAI's wire form: the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {}
    return {"name": value["name"].strip(), "args": arguments if isinstance(arguments, dict) else {}}


def with_written_calls(reply: BaseMessage) -> BaseMessage:
    """The reply with the calls written in its text made real tool calls, and its text without them.
    A reply whose text holds no call comes back as it is."""
    if not isinstance(reply, AIMessage):
        return reply
    calls: list[dict[str, Any]] = []
    content: str | list[Any]
    if isinstance(reply.content, str):
        read = read_written_calls(reply.content)
        content, calls = read.text, list(read.calls)
    else:
        content = []
        for block in reply.content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                read = read_written_calls(block["text"])
                calls += read.calls
                block = {**block, "text": read.text}
            content.append(block)
    if not calls:
        return reply
    made = [
        {"name": c["name"], "args": c["args"], "id": f"call_{uuid.uuid4().hex[:16]}", "type": "tool_call"}
        for c in calls
    ]
    return reply.model_copy(update={"content": content, "tool_calls": [*reply.tool_calls, *made]})
