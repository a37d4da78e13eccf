"""Traces and logs: a round's OpenTelemetry spans with the GenAI semantic conventions' names and
attributes (an in-memory exporter; the real SDK on the fake Gemini), and JSON log lines."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.inbound import Inbound
from bot.telemetry import configure_logging
from graph import tracing
from graph.models.chat import ChatModels
from graph.models.factory import DEFAULT_MODEL, ProviderConfig, build_models
from graph.observe import working_in
from tests.fakes.gemini_server import THOUGHT_TOKENS, FakeGemini

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

KEY = "console:traced"
LAUNCH = {"name": "publish_post", "args": {"channel": "news", "text": "We launched!"}}
SECRET_WORDS = "Posting the launch note now"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider)
    yield exporter
    tracing.use_tracer_provider(None)


@pytest.fixture
async def gemini() -> AsyncIterator[tuple[FakeGemini, ChatModels]]:
    async with FakeGemini(reply_text="Happy to help.") as fake:
        models = build_models(
            ProviderConfig(provider="gemini", base_url=fake.url, requests_per_minute=60_000), {"GOOGLE_API_KEY": "k"}
        )
        assert isinstance(models, ChatModels)
        yield fake, models
        for model in models.models.values():
            await model.aclose()  # type: ignore[attr-defined]


async def publish_round(open_test_app: Any, fake: FakeGemini, models: ChatModels) -> None:
    async with open_test_app(models=models) as app:
        await app.service.handle(Inbound(KEY, "you", "You", "/approvals mode on-the-loop"))
        fake.queue(SECRET_WORDS, LAUNCH)
        fake.queue("It is out.")
        await app.service.handle(Inbound(KEY, "you", "You", "Nova, publish 'We launched!' in #news"))
        await app.service.wait_idle(KEY)


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def test_a_round_is_traced_with_genai_names_and_no_text(
    open_test_app: Any, spans: InMemorySpanExporter, gemini: tuple[FakeGemini, ChatModels]
) -> None:
    fake, models = gemini
    await publish_round(open_test_app, fake, models)
    finished = spans.get_finished_spans()

    [round_span] = by_name(finished, "invoke_agent roundtable")
    turns = by_name(finished, "invoke_agent Nova")
    chats = by_name(finished, f"chat {DEFAULT_MODEL}")
    [tool] = by_name(finished, "execute_tool publish_post")
    assert turns and chats
    assert round_span.attributes is not None and round_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert round_span.attributes["gen_ai.conversation.id"] == KEY
    turn = turns[0]
    assert turn.attributes is not None and turn.attributes["gen_ai.agent.name"] == "Nova"
    assert turn.attributes["gen_ai.agent.id"] == "nova"
    assert turn.parent is not None and turn.parent.span_id == round_span.context.span_id
    chat = next(c for c in chats if c.parent is not None and c.parent.span_id == turn.context.span_id)
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "gemini"
    assert chat.attributes["gen_ai.request.model"] == DEFAULT_MODEL
    assert chat.attributes["gen_ai.usage.input_tokens"] == 12
    assert chat.attributes["roundtable.usage.thinking_tokens"] == THOUGHT_TOKENS
    assert tool.attributes is not None and tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "publish_post"
    for span in finished:  # no message text unless include_text
        assert all(SECRET_WORDS not in str(v) and "We launched" not in str(v) for v in (span.attributes or {}).values())


async def test_include_text_puts_the_messages_in_chat_spans(
    open_test_app: Any, spans: InMemorySpanExporter, gemini: tuple[FakeGemini, ChatModels]
) -> None:
    fake, models = gemini
    tracing.use_tracer_provider(tracing_provider(spans), include_text=True)
    await publish_round(open_test_app, fake, models)
    chats = by_name(spans.get_finished_spans(), f"chat {DEFAULT_MODEL}")
    assert any(SECRET_WORDS in str((c.attributes or {}).get("gen_ai.output.messages")) for c in chats)
    assert any("publish 'We launched!'" in str((c.attributes or {}).get("gen_ai.input.messages")) for c in chats)


def tracing_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_json_log_lines_carry_the_channel_and_mask_secrets() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        configure_logging("json", {"GOOGLE_API_KEY": "AIza-secret-value-123"}, [handler])
        token = working_in.set("slack:T1:C2")
        round_token = tracing.round_id.set("abc123")
        logging.getLogger("roundtable.test").warning("calling with key %s", "AIza-secret-value-123")
        working_in.reset(token)
        tracing.round_id.reset(round_token)
    finally:
        root.removeHandler(handler)
    line = json.loads(stream.getvalue().strip().splitlines()[-1])
    assert line["channel"] == "slack:T1:C2" and line["round"] == "abc123" and line["level"] == "WARNING"
    assert line["message"] == "calling with key ***"
    assert "AIza-secret-value-123" not in stream.getvalue()
