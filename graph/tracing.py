"""OpenTelemetry spans with the GenAI semantic conventions' names and attributes (optional).

A round is an `invoke_agent roundtable` span, each persona turn an `invoke_agent {persona}` span
inside it, each model call a `chat {model}` span (graph/observe.py's watcher opens and closes it)
and each action an `execute_tool {action}` span. Spans carry names, models and token counts; message
text only with `[telemetry] include_text = true`. Off (a no-op tracer) until `use_tracer_provider`
is given one: bot/telemetry.py does, with an OTLP exporter, when `[telemetry] otlp_endpoint` is set,
and with the mask that hides secrets in every text attribute, exception and status it sets.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

AGENT_NAME = "roundtable"

_tracer: trace.Tracer = trace.NoOpTracer()
_include_text = False


def _as_is(text: str) -> str:
    return text


_mask: Callable[[str], str] = _as_is

round_id: ContextVar[str] = ContextVar("roundtable_round", default="")
"""The running round's id (also in JSON log lines)."""
speaking: ContextVar[str] = ContextVar("roundtable_persona", default="")
"""The persona whose turn runs (also in JSON log lines)."""


def use_tracer_provider(
    provider: trace.TracerProvider | None, *, include_text: bool = False, mask: Callable[[str], str] | None = None
) -> None:
    """Trace with this provider from now on (None: stop tracing); `mask` hides secrets in span text."""
    global _tracer, _include_text, _mask
    _tracer = provider.get_tracer("roundtable") if provider is not None else trace.NoOpTracer()
    _include_text = include_text
    _mask = mask or _as_is


def _masked(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _mask(value) if isinstance(value, str) else value for key, value in attributes.items()}


def include_text() -> bool:
    return _include_text


@contextmanager
def span(name: str, attributes: Mapping[str, Any], kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Span]:
    """A span around the block, the current one inside it; an exception marks it as an error (its
    message and stack trace masked: OpenTelemetry's own recording would carry them as they are)."""
    if isinstance(_tracer, trace.NoOpTracer):  # tracing off: no context to switch around every turn
        yield trace.INVALID_SPAN
        return
    with _tracer.start_as_current_span(
        name, kind=kind, attributes=_masked(attributes), record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except Exception as exc:  # as OpenTelemetry's own: a cancellation is not an error
            message = _mask(str(exc))
            stacktrace = _mask("".join(traceback.format_exception(exc)))
            current.record_exception(exc, {"exception.message": message, "exception.stacktrace": stacktrace})
            current.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
            raise


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
        attributes["gen_ai.input.messages"] = _mask(str(messages))
    return _tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)


def end_chat(chat: Span, tokens: tuple[int, int, int], reply: str | None, error: BaseException | None = None) -> None:
    inputs, outputs, thinking = tokens
    chat.set_attribute("gen_ai.usage.input_tokens", inputs)
    chat.set_attribute("gen_ai.usage.output_tokens", outputs + thinking)  # as the provider bills them
    chat.set_attribute("roundtable.usage.thinking_tokens", thinking)
    if _include_text and reply is not None:
        chat.set_attribute("gen_ai.output.messages", _mask(reply))
    if error is not None:
        chat.set_attribute("error.type", type(error).__name__)
        chat.set_status(Status(StatusCode.ERROR))
    chat.end()
