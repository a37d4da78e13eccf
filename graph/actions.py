"""The actions a persona may call, and how a tool call is checked before anything runs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graph.mcp import ToolCatalog, check_arguments
from graph.models.signatures import call_signatures
from graph.risk import Risk
from personas import Persona
from storage.records import ToolCall


class _Args(BaseModel):
    """The arguments of an action. The class docstring is the tool description the model reads."""

    model_config = ConfigDict(extra="forbid")

    # Cost points: what one call is estimated to cost, on a scale by reach (1 is one direct
    # message). A deployment may set its own figures, in its own unit, with [approvals] action_costs.
    estimated_cost: ClassVar[float] = 1.0
    # How much harm a mistaken call does (graph/risk.py); a sensitive action is raised to at least high.
    risk: ClassVar[Risk] = Risk.MEDIUM
    # The action that takes a run back (`/task cancel rollback`), called with the run's own arguments.
    undo: ClassVar[str | None] = None

    @field_validator("channel", mode="before", check_fields=False)
    @classmethod
    def _without_hash(cls, value: Any) -> Any:
        # People write "#news"; platforms want "news".
        return value.strip().lstrip("#").strip() if isinstance(value, str) else value


_CHANNEL = Field(min_length=1, max_length=200, description="the channel's name, without '#', e.g. news")
_TEXT = Field(min_length=1, max_length=8000, description="the exact text to post, as the person asked for it")


class PublishPost(_Args):
    """Publish a post in a channel, under your own name and avatar. Use it only when someone asks
    you to post, publish or announce something in a channel."""

    estimated_cost: ClassVar[float] = 2.0  # everyone in the channel sees it
    undo: ClassVar[str | None] = "delete_post"

    channel: str = _CHANNEL
    text: str = _TEXT


class DeletePost(_Args):
    """Delete a post you published in a channel: the one with exactly this text. Use it only when
    someone asks you to delete, remove or take back a post of yours."""

    risk: ClassVar[Risk] = Risk.HIGH  # what it removes is not brought back

    channel: str = _CHANNEL
    text: str = Field(min_length=1, max_length=8000, description="the exact text of the post to delete")


class SendMessage(_Args):
    """Send a direct message to a person or a channel. Use it only when someone asks you to message,
    DM or tell someone something."""

    to: str = Field(min_length=1, max_length=200, description="the person's name or user id, or a channel")
    text: str = _TEXT


class SchedulePost(_Args):
    """Schedule a post in a channel for a later time. Use it only when someone asks you to post
    something at a given time."""

    estimated_cost: ClassVar[float] = 3.0  # a channel post that goes out later, with nobody watching

    at: datetime = Field(description="when to post: ISO 8601 date and time, with a timezone")
    channel: str = _CHANNEL
    text: str = _TEXT


class NoteTo(_Args):
    """Send a private note to another persona in this conversation: only they read it, at their next
    turn, and it never appears in the channel. Use it only when someone asks you to send, leave or
    pass another persona a note, or to tell them something privately."""

    risk: ClassVar[Risk] = Risk.LOW  # delivered at once, never through the approval policy

    persona: str = Field(min_length=1, max_length=100, description="the persona's name, e.g. Rex")
    text: str = Field(min_length=1, max_length=2000, description="the note, as the persona should read it")

    @field_validator("persona", mode="before")
    @classmethod
    def _plain_name(cls, value: Any) -> Any:
        # "@Rex" and "Rex" both name the persona rex; graph/mailbox.py matches ids and names.
        return value.strip().lstrip("@").strip().casefold() if isinstance(value, str) else value


class Remember(_Args):
    """Keep a note for yourself: it is shown to you in every later prompt, in your memory block,
    numbered. Use it when someone asks you to remember or note something, or not to forget it. To
    drop a note that no longer holds, give its number as `forget` (with or without a new text)."""

    risk: ClassVar[Risk] = Risk.LOW  # judged by the approval policy like any action: in command it waits

    text: str = Field(
        default="", max_length=500, description="the note, in your own words, e.g. Ana's deadline is Friday"
    )
    forget: int = Field(default=0, ge=0, le=1000, description="the number of an earlier note to drop; 0 for none")

    @model_validator(mode="after")
    def _something_to_do(self) -> Remember:
        if not self.text.strip() and not self.forget:
            raise ValueError("give a text to remember, or the number of a note to forget")
        return self


ACTIONS: dict[str, type[_Args]] = {
    "publish_post": PublishPost,
    "send_message": SendMessage,
    "schedule_post": SchedulePost,
    "note_to": NoteTo,  # delivered by graph/mailbox.py, never through the approval policy
    "remember": Remember,  # kept by graph/memory.py, judged by the approval policy like any action
    "delete_post": DeletePost,  # publish_post's undo (graph/rollback.py)
}


CONFIDENCE = "confidence"
_CONFIDENCE_SCHEMA = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "how sure you are, from 0 to 1, that this is the action and the arguments the person asked for",
}


def confidence_schema() -> dict[str, Any]:
    """The optional `confidence` property every tool call may state."""
    return dict(_CONFIDENCE_SCHEMA)


def cost_of(name: str, overrides: Mapping[str, float]) -> float:
    """An action's estimated cost: the deployment's figure when it set one, else the action's own
    (an MCP tool, "SERVER.TOOL", costs 1 unless [approvals] action_costs names it)."""
    spec = ACTIONS.get(name)
    return overrides.get(name, spec.estimated_cost if spec else _Args.estimated_cost)


def declared_risk(name: str) -> Risk | None:
    """A built-in action's declared risk; None for an MCP tool (its risk is config's, graph/mcp.py)."""
    spec = ACTIONS.get(name)
    return spec.risk if spec else None


@cache  # in every system prompt of a persona that may act
def action_description(name: str) -> str:
    return " ".join((ACTIONS[name].__doc__ or name).split())


def tool_definitions(names: Sequence[str]) -> list[dict[str, Any]]:
    """The actions `names` as tools in OpenAI function format, which every LangChain chat model's
    bind_tools accepts: names, descriptions and JSON schemas straight from the pydantic models."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": action_description(name),
                "parameters": _parameters(ACTIONS[name]),
            },
        }
        for name in names
        if name in ACTIONS
    ]


def _parameters(spec: type[_Args]) -> dict[str, Any]:
    """The arguments' schema, plus the optional `confidence` every call may state: it is read by the
    approval policy ([approvals] min_confidence) and never reaches the action itself."""
    schema = spec.model_json_schema()
    for annotation in ("title", "description", "additionalProperties"):  # Gemini's schema has no additionalProperties
        schema.pop(annotation, None)
    for field_schema in schema.get("properties", {}).values():
        field_schema.pop("title", None)
    schema["properties"][CONFIDENCE] = dict(_CONFIDENCE_SCHEMA)
    return schema


@dataclass(frozen=True)
class ActionCall:
    """A checked tool call, ready for the policy and the port."""

    call_id: str
    name: str
    args: dict[str, Any]
    confidence: float | None = None  # as the model stated it; not an argument of the action

    def describe(self) -> str:
        shown = ", ".join(f"{key}={_short(value)!r}" for key, value in self.args.items())
        return f"{self.name}({shown})"


def _short(value: Any, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_call(
    persona: Persona, call_id: str, name: str, args: Any, tools: ToolCatalog | None = None
) -> ActionCall | str:
    """The call, validated; or the tool error the persona gets back instead. A call of an MCP tool
    (from `tools`) is checked against the tool's input schema and named "SERVER.TOOL" from here on."""
    mcp_tool = tools.find(persona, name) if tools is not None and name not in ACTIONS else None
    if name not in persona.actions and mcp_tool is None:
        names = (
            [*persona.actions, *(tools.exposed_name(t) for t in tools.allowed(persona))] if tools else persona.actions
        )
        return f"error: {name} is not an action {persona.display_name} may use (allowed: {', '.join(names) or 'none'})"
    arguments = dict(args) if isinstance(args, dict) else {}
    stated = arguments.pop(CONFIDENCE, None)
    confidence = _confidence(stated)
    if stated is not None and confidence is None:
        return f"error: bad arguments for {name}: {CONFIDENCE}: a number from 0 to 1, got {_short(stated, 20)!r}"
    if mcp_tool is not None:
        problem = check_arguments(mcp_tool, arguments)
        if problem:
            return f"error: bad arguments for {name}: {problem}"
        return ActionCall(call_id=call_id, name=mcp_tool.qualified, args=arguments, confidence=confidence)
    spec = ACTIONS.get(name)
    if spec is None:
        return f"error: {name} is not a known action"
    try:
        parsed = spec.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        return f"error: bad arguments for {name}: {where}: {first['msg']}"
    return ActionCall(call_id=call_id, name=name, args=parsed.model_dump(mode="json"), confidence=confidence)


def _confidence(value: Any) -> float | None:
    """A stated confidence as a number from 0 to 1 (some models send "0.8" as a string); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0 <= number <= 1 else None


def tool_calls_of(reply: Any) -> list[dict[str, Any]]:
    """A model reply's tool calls as plain dicts (id, name, args, and the call's thought signature
    when its model sent one), each with an id: a few OpenAI-compatible servers leave it out, and a
    call must be paired with its result by id."""
    signatures = call_signatures(reply) if isinstance(reply, BaseMessage) else {}
    return [
        {
            "id": call.get("id") or f"call_{uuid.uuid4().hex[:16]}",
            "name": call.get("name", ""),
            "args": call.get("args") or {},
            **({"signature": signatures[call["id"]]} if call.get("id") in signatures else {}),
        }
        for call in getattr(reply, "tool_calls", None) or []
    ]


def stored_calls(calls: Sequence[dict[str, Any]]) -> list[ToolCall]:
    """tool_calls_of's dicts as the ToolCalls stored with the persona's line."""
    return [ToolCall(c["id"], c["name"], c["args"], c.get("signature")) for c in calls]
