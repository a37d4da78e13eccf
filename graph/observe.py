"""What the operator sees of the graph: Prometheus metrics, and every model call watched once.

The metrics live in prometheus-client's default registry (bot/ops.py serves them on /metrics). A
ModelCallWatcher is a LangChain callback handler that every model of ChatModels carries
(graph/models/chat.py): it times each call, reads its usage metadata (input, output and thinking
tokens; the embedded model counts its own) and hands one ModelCall to whoever records usage
(bot/usage.py), tagged with the channel whose work made the call (`working_in`, set per channel).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry.trace import Span
from prometheus_client import Counter, Gauge, Histogram

from graph import tracing

log = logging.getLogger(__name__)

ROLES = ("persona", "moderator", "judge", "planner")

MESSAGES = Counter("roundtable_messages_received", "Human messages received and stored", ["platform"])
ROUNDS = Counter("roundtable_rounds", "Rounds run")
TURNS = Counter("roundtable_turns", "Persona turns taken, by outcome (spoke or skipped)", ["outcome"])
MODEL_SECONDS = Histogram(
    "roundtable_model_call_seconds",
    "Model call latency",
    ["provider", "role"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
TOKENS = Counter("roundtable_model_tokens", "Model tokens used, by role and kind", ["role", "kind"])
APPROVALS = Gauge("roundtable_approvals", "Approvals by status (pending, and decided by outcome)", ["status"])
QUEUE_DEPTH = Gauge("roundtable_channel_queue_depth", "Messages waiting for a round, in the deepest channel queue")
QUEUED = Gauge("roundtable_queued_messages", "Messages waiting for a round, all channels")
LOOP_LAG = Gauge("roundtable_event_loop_lag_seconds", "How late the event loop ran a timer, last measured")
DELIVERY_FAILURES = Counter("roundtable_delivery_failures", "Posts a platform refused or never answered", ["platform"])

working_in: ContextVar[str] = ContextVar("roundtable_channel", default="")
"""The channel key whose work runs in this task (bot/service.py sets it per channel worker)."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    channel_key: str
    persona_id: str  # "" for the moderator, planner and coordinator
    role: str
    provider: str
    model: str
    seconds: float
    input_tokens: int
    output_tokens: int  # the reply, thinking excluded
    thinking_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens


RecordCall = Callable[[ModelCall], Awaitable[None]]


def call_tags(role: str, persona_id: str = "") -> dict[str, Any]:
    """The metadata a model runnable carries so its watcher knows the call's role and persona."""
    return {"roundtable_role": role, "roundtable_persona": persona_id}


def usage_of(message: Any) -> tuple[int, int, int]:
    """(input, output without thinking, thinking) tokens from a reply's LangChain usage metadata."""
    usage = getattr(message, "usage_metadata", None) or {}
    thinking = int((usage.get("output_token_details") or {}).get("reasoning") or 0)
    output = int(usage.get("output_tokens") or 0)
    # LangChain counts thinking inside output_tokens for Gemini and OpenAI alike.
    return int(usage.get("input_tokens") or 0), max(0, output - thinking), thinking


class ModelCallWatcher(AsyncCallbackHandler):
    """Times and counts every model call, and hands each to `record` (storage of usage, spans)."""

    def __init__(self, provider: str, record: RecordCall | None = None) -> None:
        self.provider = provider
        self.record = record
        self._started: dict[UUID, tuple[float, dict[str, Any], str]] = {}
        self._spans: dict[UUID, Span] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        model = str(params.get("model") or params.get("model_name") or (metadata or {}).get("ls_model_name") or "")
        self._started[run_id] = (time.perf_counter(), dict(metadata or {}), model)
        self._spans[run_id] = tracing.start_chat(self.provider, model, working_in.get(), messages)

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._started.pop(run_id, None)
        if started is None:
            return
        begun, metadata, model = started
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        message = generation.message if isinstance(generation, ChatGeneration) else None
        role = str(metadata.get("roundtable_role") or "persona")
        seconds = time.perf_counter() - begun
        inputs, outputs, thinking = usage_of(message)
        if (chat := self._spans.pop(run_id, None)) is not None:
            tracing.end_chat(chat, (inputs, outputs, thinking), getattr(message, "text", None))
        MODEL_SECONDS.labels(self.provider, role).observe(seconds)
        for kind, count in (("input", inputs), ("output", outputs), ("thinking", thinking)):
            if count:
                TOKENS.labels(role, kind).inc(count)
        call = ModelCall(
            working_in.get(),
            str(metadata.get("roundtable_persona") or ""),
            role,
            self.provider,
            model,
            seconds,
            inputs,
            outputs,
            thinking,
        )
        if self.record is not None:
            try:
                await self.record(call)
            except Exception:
                log.exception("recording a model call's usage failed")

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._started.pop(run_id, None)
        if (chat := self._spans.pop(run_id, None)) is not None:
            tracing.end_chat(chat, (0, 0, 0), None, error)
        if started is not None:
            role = str(started[1].get("roundtable_role") or "persona")
            MODEL_SECONDS.labels(self.provider, role).observe(time.perf_counter() - started[0])
