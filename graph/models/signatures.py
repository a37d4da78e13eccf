"""Thought signatures: what a Gemini 3 model sends with its reply's parts, and what every later
request must give back unchanged (Google's "Thought Signatures" page).

langchain-google-genai carries them in the AIMessage: a function call's signature in
`additional_kwargs["__gemini_function_call_thought_signatures__"]` by tool call id, a text part's in
the text content block's `extras.signature`. Roundtable stores them with the persona's line and its
tool calls (storage/history.py) and rebuilds the same message from the stored line, so a replayed
call carries its own signature, after a restart too, and never langchain's "skip validator" stand-in.
Other providers send none; their lines store none and replay as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from storage.records import ToolCall

CALL_SIGNATURES_KEY = "__gemini_function_call_thought_signatures__"


def call_signatures(reply: BaseMessage) -> dict[str, str]:
    """The thought signature of each of the reply's tool calls that has one, by call id."""
    found = reply.additional_kwargs.get(CALL_SIGNATURES_KEY) or {}
    return {str(call_id): str(signature) for call_id, signature in found.items() if signature}


def text_signature(reply: BaseMessage) -> str | None:
    """The signature on the reply's text (the last text part that has one), if any."""
    signature = None
    for block in reply.content if isinstance(reply.content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text":
            extras = block.get("extras")
            found = extras.get("signature") if isinstance(extras, dict) else None
            signature = found or block.get("signature") or block.get("thought_signature") or signature
    return str(signature) if signature else None


def replayed_turn(content: str, calls: Sequence[ToolCall], signature: str | None, message_id: str) -> AIMessage:
    """A persona's stored turn as the AIMessage its model wrote: the calls with their signatures, and
    the text as a signed text block when it had a signature."""
    tool_calls = [{"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in calls]
    signed = {c.id: c.signature for c in calls if c.signature}
    extra: dict[str, Any] = {CALL_SIGNATURES_KEY: signed} if signed else {}
    body: str | list[str | dict[Any, Any]] = content
    if signature:
        body = [{"type": "text", "text": content, "extras": {"signature": signature}}]
    return AIMessage(content=body, tool_calls=tool_calls, additional_kwargs=extra, id=message_id)
