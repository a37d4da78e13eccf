"""Secrets never reach the log or a trace: the values of the secret environment variables and of the
variables passed to MCP servers are masked in the whole formatted log line (tracebacks included, text
and JSON) and in every text a span carries (attributes, exception events, status), on the real
logging module and the real OpenTelemetry SDK with an in-memory exporter."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.telemetry import Secrets, configure_logging
from graph import tracing

API_KEY = "AIza-secret-value-123"
MCP_PASSWORD = 'db-pass"word\\42'  # passed to an MCP server; a quote and a backslash, which JSON escapes
ENVIRON = {"GOOGLE_API_KEY": API_KEY, "NOTES_DB_PASSWORD": MCP_PASSWORD, "NOTES_LIMIT": "10"}


def logged(log_format: str, emit: Any, secret_names: tuple[str, ...] = ()) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("roundtable.masking")
    logger.addHandler(handler)
    try:
        if secret_names:
            configure_logging(log_format, ENVIRON, [handler], secret_names=secret_names)
        else:
            configure_logging(log_format, ENVIRON, [handler])
        emit(logger)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def connect(key: str) -> None:
    raise ConnectionError(f"the provider refused the key {key}")


def failing_call(logger: logging.Logger) -> None:
    try:
        connect(API_KEY)
    except ConnectionError:
        logger.exception("a model call failed")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_secret_in_an_exceptions_traceback_is_masked_in_the_log_output(log_format: str) -> None:
    output = logged(log_format, failing_call)

    assert "a model call failed" in output and "Traceback" in output and "connect(" in output
    assert "ConnectionError: the provider refused the key ***" in output
    assert API_KEY not in output


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_values_passed_to_mcp_servers_are_masked_in_the_log_output(log_format: str) -> None:
    def emit(logger: logging.Logger) -> None:
        logger.warning("MCP server notes stopped: could not log in with %s", MCP_PASSWORD)
        logger.warning("MCP server notes lists %s notes", ENVIRON["NOTES_LIMIT"])  # too short to be a secret

    output = logged(log_format, emit, secret_names=("NOTES_DB_PASSWORD", "NOTES_LIMIT"))

    assert "could not log in with ***" in output and "lists 10 notes" in output
    assert "db-pass" not in output


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_tracer_provider(provider, include_text=True, mask=Secrets(ENVIRON, ["NOTES_DB_PASSWORD"]).mask)
    yield exporter
    tracing.use_tracer_provider(None)


def test_span_attributes_exceptions_and_status_are_masked(spans: InMemorySpanExporter) -> None:
    with (
        pytest.raises(ConnectionError),
        tracing.span("execute_tool notes.login", {"args": f"{{'password': '{MCP_PASSWORD}'}}"}),
    ):
        connect(API_KEY)
    chat = tracing.start_chat("gemini", "gemini-test", "console:general", [f"my key is {API_KEY}"])
    tracing.end_chat(chat, (1, 1, 0), f"Noted: {API_KEY}")

    finished = spans.get_finished_spans()
    texts = [str(dict(s.attributes or {})) for s in finished]
    texts += [str(dict(e.attributes or {})) for s in finished for e in s.events]
    texts += [str(s.status.description) for s in finished]
    everything = "\n".join(texts)
    assert "the provider refused the key ***" in everything and "my key is ***" in everything
    assert API_KEY not in everything and "db-pass" not in everything
    [tool] = [s for s in finished if s.name == "execute_tool notes.login"]
    assert [e.name for e in tool.events] == ["exception"] and not tool.status.is_ok
