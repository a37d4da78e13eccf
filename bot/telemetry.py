"""How the process reports: log lines as text or JSON (`[logging] format`), and OpenTelemetry traces
to OTLP when `[telemetry] otlp_endpoint` is set (graph/tracing.py makes the spans). Secrets (the
values of SECRET_ENV_VARS and of every variable passed to an MCP server) are masked in the whole
formatted line, tracebacks included, and in every text a span carries."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from bot.config import SECRET_ENV_VARS, Config
from bot.settings import Settings
from graph import tracing
from graph.observe import working_in

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


MIN_SECRET_CHARS = 6  # a shorter value ("0", "true") would mask ordinary words


class Secrets:
    """The values to hide: the environment's secrets and what is passed to MCP servers, as they are
    and as JSON escapes them (a JSON log line carries a quote or a backslash escaped)."""

    def __init__(self, environ: Mapping[str, str], names: Iterable[str] = ()) -> None:
        values = {v for k in (*SECRET_ENV_VARS, *names) if len(v := environ.get(k, "")) >= MIN_SECRET_CHARS}
        escaped = {json.dumps(v, ensure_ascii=False)[1:-1] for v in values}
        self.values = sorted(values | escaped, key=len, reverse=True)  # a longer secret first

    def mask(self, text: str) -> str:
        for secret in self.values:
            text = text.replace(secret, "***")
        return text


def mcp_env_names(config: Config) -> list[str]:
    """The names of the variables config.toml passes to its MCP servers."""
    return [name for server in config.settings.mcp.servers.values() for name in server.env]


class MaskedFormatter(logging.Formatter):
    """Formats a record as `inner` does, then masks secrets in the whole line: message, arguments,
    traceback and stack alike."""

    def __init__(self, inner: logging.Formatter, secrets: Secrets) -> None:
        super().__init__()
        self.inner = inner
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        return self.secrets.mask(self.inner.format(record))


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
    log_format: str,
    environ: Mapping[str, str] = os.environ,
    handlers: Sequence[logging.Handler] | None = None,
    secret_names: Iterable[str] = (),
) -> None:
    """Format the handlers' lines (the root logger's by default) as `log_format` says, with secrets
    (SECRET_ENV_VARS' values and `secret_names`') masked in the whole line."""
    secrets = Secrets(environ, secret_names)
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        inner = JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
        handler.setFormatter(MaskedFormatter(inner, secrets))


@contextmanager
def traced(settings: Settings, secrets: Secrets | None = None) -> Iterator[None]:
    """Spans go to `[telemetry] otlp_endpoint` over OTLP/HTTP while the block runs, secrets masked;
    none when it is empty."""
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
    mask = (secrets or Secrets(os.environ)).mask
    tracing.use_tracer_provider(provider, include_text=settings.telemetry.include_text, mask=mask)
    try:
        yield
    finally:
        tracing.use_tracer_provider(None)
        provider.shutdown()  # sends what is still batched
