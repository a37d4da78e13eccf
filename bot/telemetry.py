"""How the process reports: log lines as text or JSON (`[logging] format`), with secrets masked in
either, and OpenTelemetry traces to OTLP when `[telemetry] otlp_endpoint` is set (graph/tracing.py
makes the spans)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from bot.config import SECRET_ENV_VARS
from bot.settings import Settings
from graph import tracing
from graph.observe import working_in

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class MaskSecrets(logging.Filter):
    """Replaces the value of every secret environment variable in a record's message with ***."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__()
        self.secrets = [v for k in SECRET_ENV_VARS if len(v := environ.get(k, "")) >= 6]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            masked = message
            for secret in self.secrets:
                masked = masked.replace(secret, "***")
            if masked != message:
                record.msg, record.args = masked, None
        return True


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and the channel key, persona and round
    id of the work the line was logged in, where there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in (
            ("channel", working_in.get()),
            ("persona", tracing.speaking.get()),
            ("round", tracing.round_id.get()),
        ):
            if value:
                line[key] = value
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure_logging(
    log_format: str, environ: Mapping[str, str] = os.environ, handlers: Sequence[logging.Handler] | None = None
) -> None:
    """Format the handlers' lines (the root logger's by default) as `log_format` says, secrets masked."""
    mask = MaskSecrets(environ)
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        handler.setFormatter(JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
        handler.addFilter(mask)


@contextmanager
def traced(settings: Settings) -> Iterator[None]:
    """Spans go to `[telemetry] otlp_endpoint` over OTLP/HTTP while the block runs; none when it is empty."""
    endpoint = settings.telemetry.otlp_endpoint
    if not endpoint:
        yield
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "roundtable"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracing.use_tracer_provider(provider, include_text=settings.telemetry.include_text)
    try:
        yield
    finally:
        tracing.use_tracer_provider(None)
        provider.shutdown()  # sends what is still batched
