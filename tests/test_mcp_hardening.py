"""MCP servers cannot reach past what config.toml gives them: a tool whose input schema refers outside
itself is refused when the tools are listed (nothing is fetched), and a stdio child starts in the data
directory with only its configured environment. A real MCP server (tests/mcp_probe_server.py) over
stdio, the real providers' SDKs on their fakes, the real Slack app on the fake Slack Web API."""

from __future__ import annotations

import ast
import json
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from tests.conftest import REPO
from tests.fakes.providers import PROVIDERS, fake_provider
from tests.slack_harness import StartSlack
from tests.test_actions_wire import Provider

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

PROBE_SERVER = REPO / "tests" / "mcp_probe_server.py"
FORECAST = {"name": "forecast", "args": {"city": "Oslo"}}
WHERE = {"name": "where", "args": {}}
# The mcp SDK's (PATH, HOME, USER, LOGNAME, SHELL, TERM), and LC_CTYPE, which the child's Python sets
# itself when it starts in the C locale (PEP 538).
SAFE_INHERITED = {*DEFAULT_INHERITED_ENV_VARS, "LC_CTYPE"}


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Noted.") as (server, models):
        yield Provider(request.param, server, models)


@contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that answers a schema to anyone who asks, and counts who did."""
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            requests.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/city.schema.json", requests
    finally:
        server.shutdown()
        server.server_close()


def probe_sections(tmp_path: Path, env: list[str]) -> dict[str, dict[str, Any]]:
    """The repo's personas, Rex with every tool of the probe server, which config.toml declares."""
    personas = tmp_path / "personas"
    personas.mkdir()
    for source in (REPO / "personas").glob("*.toml"):
        extra = '\ntools = ["probe"]\n' if source.stem == "rex" else ""
        (personas / source.name).write_text(source.read_text(encoding="utf-8") + extra, encoding="utf-8")
    server = {"command": [sys.executable, str(PROBE_SERVER)], "env": env, "read_only": ["where", "echo"]}
    return {"bot": {"personas_dir": str(personas)}, "mcp": {"servers": {"probe": server}}}


async def test_a_tool_whose_schema_refers_to_a_url_is_refused_at_listing_and_nothing_is_fetched(
    start_slack: StartSlack,
    provider: Provider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with counting_server() as (url, fetched):
        monkeypatch.setenv("PROBE_REMOTE_REF", url)
        async with start_slack(probe_sections(tmp_path, ["PROBE_REMOTE_REF"]), models=provider.models) as slack:
            provider.queue("Let me check the forecast.", FORECAST)  # the model asks for it anyway
            await slack.say("Rex, what is the weather in Oslo?", "1700000500.000100")
            provider.queue("Let me see where I run.", WHERE)
            await slack.say("Rex, where do you run?", "1700000501.000100")
            await slack.say("Rex, so where is that?", "1700000502.000100")  # the result comes with it

    assert fetched == []
    first = provider.bodies[0]
    assert sorted(provider.declared_tools(first)) == ["echo", "note_to", "remember", "where"]
    refused = [r.getMessage() for r in caplog.records if "probe.forecast" in r.getMessage()]
    assert refused == [f"MCP tool probe.forecast refused: its input schema refers outside itself ({url!r})"]
    # The other tools still work: `where` ran and its answer reached Rex.
    results = {name: text for body in provider.bodies for name, text in provider.paired_results(body)}
    assert "error: forecast is not an action Rex may use" in results["forecast"]
    assert '"cwd"' in results["where"]


async def test_a_stdio_server_starts_in_the_data_directory_with_only_its_configured_environment(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "bot-signing-secret-0123")  # the bot's, never the server's
    monkeypatch.setenv("PROBE_GREETING", "hello ${SLACK_SIGNING_SECRET}")  # passed as it is, never expanded
    (tmp_path / ".env").write_text("SLACK_SIGNING_SECRET=bot-signing-secret-0123\n", encoding="utf-8")
    async with start_slack(probe_sections(tmp_path, ["PROBE_GREETING"]), models=provider.models) as slack:
        provider.queue("Let me see where I run.", WHERE)
        await slack.say("Rex, where do you run?", "1700000510.000100")
        await slack.say("Rex, so where is that?", "1700000511.000100")
        data_dir = slack.bot.roundtable.config.data_dir

    [(name, result)] = provider.paired_results(provider.bodies[-1])
    text = ast.literal_eval(result)["output"] if provider.name == "gemini" else result  # Gemini's is a dict
    answer, _ = json.JSONDecoder().raw_decode(text, text.index('{"env"'))  # after "executed: "
    assert Path(answer["cwd"]) == data_dir.resolve() != tmp_path.resolve()  # config.toml and .env sit in tmp_path
    assert answer["env"]["PROBE_GREETING"] == "hello ${SLACK_SIGNING_SECRET}"
    assert set(answer["env"]) - {"PROBE_GREETING"} <= SAFE_INHERITED
    assert "bot-signing-secret-0123" not in result
