"""What the operator sees of the graph: Prometheus metrics, and every model call watched once.

The metrics live in prometheus-client's default registry (bot/ops.py serves them on /metrics). A
ModelCallWatcher wraps every model of ChatModels (graph/models/chat.py): it times each call, reads
its usage metadata (input, output and thinking tokens; the embedded model counts its own) and hands
one ModelCall to whoever records usage (bot/usage.py), tagged with the channel whose work made the
call (`working_in`, set per channel).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from prometheus_client import Counter, Gauge, Histogram

from graph import tracing
from graph.models.base import ChatRunnable

log = logging.getLogger(__name__)

ROLES = ("persona", "moderator", "judge", "planner", "summary")

MESSAGES = Counter("roundtable_messages_received", "Human messages received and stored", ["platform"])
ROUNDS = Counter("roundtable_rounds", "Rounds run")
TURNS = Counter("roundtable_turns", "Persona turns taken, by outcome (spoke, passed or skipped)", ["outcome"])
TOOL_STEP_LIMITS = Counter("roundtable_tool_step_limits", "Persona turns stopped at [actions] max_steps model calls")
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
STEP_ATTEMPTS = Counter(
    "roundtable_task_step_attempts",
    "Attempts at task steps, by outcome (completed, waiting for approval, retried, failed)",
    ["outcome"],
)
STEP_FAILURES = Counter(
    "roundtable_task_step_failures",
    "Task steps failed for good, by cause (model, review, copied, action, persona, error, other)",
    ["cause"],
)
OUTBOX = Gauge("roundtable_outbox_posts", "Posts in the outbox: waiting to go out, and failed for good", ["status"])
TASK_OUTCOMES = ("completed", "failed", "stopped", "cancelled")
TASKS = Counter("roundtable_tasks", "Tasks ended, by outcome (completed, failed, stopped, cancelled)", ["outcome"])
for _outcome in TASK_OUTCOMES:
    TASKS.labels(_outcome)
ESCALATIONS = Counter(
    "roundtable_escalations",
    "Actions sent to a person, by reason (burst, cost, confidence, or mode: the mode alone) and the mode they were judged in",
    ["reason", "mode"],
)
MAILBOX_DROPS = Counter("roundtable_mailbox_drops", "Notes a full mailbox dropped (never delivered)")

working_in: ContextVar[str] = ContextVar("roundtable_channel", default="")
"""The channel key whose work runs in this task (bot/service.py sets it per channel worker)."""


def task_ended(status: str, *, cancelled: bool) -> None:
    """Count a task that ended: its status, or "cancelled" when people cancelled it (/task cancel)."""
    TASKS.labels("cancelled" if cancelled and status == "stopped" else status).inc()


def escalated(triggers: Sequence[str], mode: str) -> None:
    """Count an action sent to a person: once per trigger that made it wait, or once as "mode" when
    the mode it was judged in alone did."""
    for reason in triggers or ("mode",):
        ESCALATIONS.labels(reason, mode).inc()


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


def usage_of(message: Any) -> tuple[int, int, int]:
    """(input, output without thinking, thinking) tokens from a reply's LangChain usage metadata."""
    usage = getattr(message, "usage_metadata", None) or {}
    thinking = int((usage.get("output_token_details") or {}).get("reasoning") or 0)
    output = int(usage.get("output_tokens") or 0)
    # LangChain counts thinking inside output_tokens for Gemini and OpenAI alike.
    return int(usage.get("input_tokens") or 0), max(0, output - thinking), thinking


class ModelCallWatcher:
    """Times and counts every model call, and hands each to `record` (storage of usage, spans).

    Not a LangChain callback handler: a handler on a model makes LangChain run its callback machinery
    for every call, which cost ~80 µs a call here, more than all the rest of the operator's view
    (bench/ops.py). `watched` wraps the model instead, around its ainvoke."""

    def __init__(self, provider: str, record: RecordCall | None = None) -> None:
        self.provider = provider
        self.record = record

    def watched(self, model: ChatRunnable, model_name: str, role: str, persona_id: str = "") -> ChatRunnable:
        return WatchedModel(model, self, model_name, role, persona_id)

    async def call(self, watched: WatchedModel, messages: Any, config: RunnableConfig | None, **kwargs: Any) -> Any:
        chat = tracing.start_chat(self.provider, watched.model_name, working_in.get(), messages)
        begun = time.perf_counter()
        try:
            reply = await watched.model.ainvoke(messages, config, **kwargs)
        except BaseException as error:
            tracing.end_chat(chat, (0, 0, 0), None, error)
            MODEL_SECONDS.labels(self.provider, watched.role).observe(time.perf_counter() - begun)
            raise
        seconds = time.perf_counter() - begun
        inputs, outputs, thinking = usage_of(reply)
        tracing.end_chat(chat, (inputs, outputs, thinking), getattr(reply, "text", None))
        MODEL_SECONDS.labels(self.provider, watched.role).observe(seconds)
        for kind, count in (("input", inputs), ("output", outputs), ("thinking", thinking)):
            if count:
                TOKENS.labels(watched.role, kind).inc(count)
        if self.record is not None:
            call = ModelCall(
                working_in.get(),
                watched.persona_id,
                watched.role,
                self.provider,
                watched.model_name,
                seconds,
                inputs,
                outputs,
                thinking,
            )
            try:
                await self.record(call)
            except Exception:
                log.exception("recording a model call's usage failed")
        return reply


class WatchedModel(Runnable[LanguageModelInput, BaseMessage]):
    """A model whose every (async) call its watcher times and counts; otherwise the model itself."""

    def __init__(self, model: ChatRunnable, watcher: ModelCallWatcher, model_name: str, role: str, persona_id: str):
        self.model = model
        self.watcher = watcher
        self.model_name = model_name
        self.role = role
        self.persona_id = persona_id

    def invoke(self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any) -> BaseMessage:
        raise NotImplementedError("the graph calls models asynchronously: use ainvoke")

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> BaseMessage:
        reply: BaseMessage = await self.watcher.call(self, input, config, **kwargs)
        return reply
