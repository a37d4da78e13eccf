"""OpenTelemetry spans with the GenAI semantic conventions' names and attributes (optional).

A round is an `invoke_agent roundtable` span, each persona turn an `invoke_agent {persona}` span
inside it, each model call a `chat {model}` span (graph/observe.py's watcher opens and closes it)
and each action an `execute_tool {action}` span. Spans carry names, models and token counts; message
text only with `[telemetry] include_text = true`. Off (a no-op tracer) until `use_tracer_provider`
is given one: bot/telemetry.py does, with an OTLP exporter, when `[telemetry] otlp_endpoint` is set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

AGENT_NAME = "roundtable"

_tracer: trace.Tracer = trace.NoOpTracer()
_include_text = False

round_id: ContextVar[str] = ContextVar("roundtable_round", default="")
"""The running round's id (also in JSON log lines)."""
speaking: ContextVar[str] = ContextVar("roundtable_persona", default="")
"""The persona whose turn runs (also in JSON log lines)."""


def use_tracer_provider(provider: trace.TracerProvider | None, *, include_text: bool = False) -> None:
    """Trace with this provider from now on (None: stop tracing)."""
    global _tracer, _include_text
    _tracer = provider.get_tracer("roundtable") if provider is not None else trace.NoOpTracer()
    _include_text = include_text


def include_text() -> bool:
    return _include_text


@contextmanager
def span(name: str, attributes: Mapping[str, Any], kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Span]:
    """A span around the block, the current one inside it; an exception marks it as an error."""
    with _tracer.start_as_current_span(name, kind=kind, attributes=dict(attributes)) as current:
        yield current


@contextmanager
def agent_span(agent: str, channel_key: str, agent_id: str = "") -> Iterator[Span]:
    """An `invoke_agent` span: the round (agent "roundtable") or a persona's turn (its name and id)."""
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": channel_key,
    }
    if agent_id:
        attributes["gen_ai.agent.id"] = agent_id
    if round_id.get():
        attributes["roundtable.round.id"] = round_id.get()
    turn = speaking.set(agent_id)
    try:
        with span(f"invoke_agent {agent}", attributes) as current:
            yield current
    finally:
        speaking.reset(turn)


def tool_span(tool: str, call_id: str, channel_key: str) -> Any:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.conversation.id": channel_key,
    }
    return span(f"execute_tool {tool}", attributes)


def start_chat(provider: str, model: str, channel_key: str, messages: Any) -> Span:
    """A `chat {model}` span, started now as a child of the current span and ended by end_chat."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": channel_key,
    }
    if _include_text:
        attributes["gen_ai.input.messages"] = str(messages)
    return _tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)


def end_chat(chat: Span, tokens: tuple[int, int, int], reply: str | None, error: BaseException | None = None) -> None:
    inputs, outputs, thinking = tokens
    chat.set_attribute("gen_ai.usage.input_tokens", inputs)
    chat.set_attribute("gen_ai.usage.output_tokens", outputs + thinking)  # as the provider bills them
    chat.set_attribute("roundtable.usage.thinking_tokens", thinking)
    if _include_text and reply is not None:
        chat.set_attribute("gen_ai.output.messages", reply)
    if error is not None:
        chat.set_attribute("error.type", type(error).__name__)
        chat.set_status(Status(StatusCode.ERROR))
    chat.end()
