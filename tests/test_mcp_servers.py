"""MCP servers outside the chat: config.toml's [mcp] section (one-line errors), persona `tools`
checked against the configured servers, the reference server from PyPI (mcp-server-time, through
the test extra) over stdio, a stdio server in its own process group and stopped on shutdown (also
while it is still starting), and a call that was running when the bot was killed (SIGKILL after
Approve) reported as outcome unknown."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from bot.config import ConfigError, load_config
from bot.mcp_servers import McpServers
from graph.mcp import McpTool, check_arguments, describe_result, model_schema
from personas import check_persona_file
from tests.conftest import run_bot, run_console, write_config
from tests.interactive_console import InteractiveConsole
from tests.mcp_setup import NOTES_SERVER, calls_received, notes_environment, server_pid, stdio_sections, wait_until


def _config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_bad_mcp_server_tables_are_one_line_errors(tmp_path: Path) -> None:
    assert "[mcp.servers] git: expected either command (a stdio server) or url" in _config_error(
        tmp_path, '[mcp.servers.git]\ncommand = ["x"]\nurl = "http://127.0.0.1:1/mcp"\n'
    )
    assert "[mcp.servers.git] url: expected an http:// or https:// URL" in _config_error(
        tmp_path, '[mcp.servers.git]\nurl = "ftp://host/mcp"\n'
    )
    assert "[mcp.servers.git.env] 0: expected String should match pattern" in _config_error(
        tmp_path, '[mcp.servers.git]\ncommand = ["x"]\nenv = ["NOT A NAME"]\n'
    )
    assert "[mcp.servers.git] tokens: unknown key" in _config_error(
        tmp_path, '[mcp.servers.git]\ncommand = ["x"]\ntokens = 1\n'
    )


def test_persona_check_rejects_an_unknown_server_and_once_listed_an_unknown_tool(tmp_path: Path) -> None:
    persona = tmp_path / "ivy.toml"
    persona.write_text(
        'id = "ivy"\ndisplay_name = "Ivy"\navatar = ":ivy:"\ntalkativeness = 0.5\nsystem_prompt = "Hi."\n'
        'tools = ["notes.read_note", "notes.erase_all", "jira"]\n',
        encoding="utf-8",
    )
    before = check_persona_file(persona, known_tools={"notes": None})
    assert before.problems == ("tools: unknown MCP server 'jira' (configured: notes)",)
    after = check_persona_file(persona, known_tools={"notes": ["read_note", "write_note"]})
    assert after.problems == (
        "tools: server 'notes' has no tool 'erase_all' (it lists: read_note, write_note)",
        "tools: unknown MCP server 'jira' (configured: notes)",
    )
    # The CLI reads config.toml's servers (and what the bot last listed) when given --config.
    config = write_config(tmp_path, {"mcp": {"servers": {"notes": {"command": ["x"]}}}})
    checked = run_bot("persona", "check", "--config", str(config), str(persona))
    assert checked.returncode == 2
    assert checked.stdout.strip().splitlines() == [f"{persona}: tools: unknown MCP server 'jira' (configured: notes)"]


def test_results_are_shaped_for_the_persona() -> None:
    long = describe_result([{"type": "text", "text": "x" * 150}], is_error=False, max_chars=100)
    assert long.ok and long.text.startswith("x" * 100)
    assert "[cut: the tool returned 150 characters; the first 100 are shown]" in long.text
    image = describe_result(
        [{"type": "image", "data": "AAAA" * 10, "mimeType": "image/png"}], is_error=False, max_chars=100
    )
    assert image.text == "[image image/png, 30 bytes]"
    failed = describe_result([{"type": "text", "text": "no such repo"}], is_error=True, max_chars=100)
    assert not failed.ok and failed.text == "failed: the tool reported an error: no such repo"
    assert "no such repo" not in failed.summary  # people see a summary, never the tool's words


def test_structured_results_reach_the_persona_as_json_and_links_by_name_uri_and_type() -> None:
    weather = {"city": "Oslo", "celsius": -3}
    # The SDK's text block serializing the structure is not repeated; the structure goes as JSON.
    both = describe_result(
        [{"type": "text", "text": '{"city": "Oslo", "celsius": -3}'}], is_error=False, max_chars=500, structured=weather
    )
    assert both.text == '{"city": "Oslo", "celsius": -3}'
    only = describe_result([], is_error=False, max_chars=500, structured=weather)
    assert only.text == '{"city": "Oslo", "celsius": -3}'
    # A plain answer the SDK wrapped as {"result": ...} stays text.
    wrapped = describe_result(
        [{"type": "text", "text": "milk, eggs, bread"}],
        is_error=False,
        max_chars=500,
        structured={"result": "milk, eggs, bread"},
    )
    assert wrapped.text == "milk, eggs, bread"
    link = describe_result(
        [
            {
                "type": "resource_link",
                "name": "q3-report.pdf",
                "uri": "file:///reports/q3.pdf",
                "mimeType": "application/pdf",
            }
        ],
        is_error=False,
        max_chars=500,
    )
    assert link.text == "[resource link q3-report.pdf: file:///reports/q3.pdf, application/pdf]"


def test_arguments_are_checked_against_the_tools_input_schema() -> None:
    tool = McpTool(
        "notes",
        "write_note",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "title": "Title"}, "text": {"type": "string"}},
            "required": ["title", "text"],
            "additionalProperties": False,
        },
    )
    assert check_arguments(tool, {"title": "a", "text": "b"}) is None
    assert check_arguments(tool, {"title": "a"}) == "arguments: 'text' is a required property"
    assert check_arguments(tool, {"title": 3, "text": "b"}) == "title: 3 is not of type 'string'"
    declared = model_schema(tool.input_schema)
    assert set(declared["properties"]) == {"title", "text"} and "additionalProperties" not in declared


async def test_the_reference_server_from_pypi_runs_over_stdio(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            {
                "mcp": {
                    "servers": {
                        "time": {
                            "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
                            "read_only": ["get_current_time"],
                        }
                    }
                }
            },
        )
    )
    catalog = McpServers.catalog_for(config)
    servers = McpServers(config, catalog)
    await servers.start(wait_seconds=60)
    try:
        assert servers.state("time") == "up"
        assert [t.name for t in catalog.servers["time"]] == ["get_current_time", "convert_time"]
        outcome = await servers.call(
            "time", "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert outcome.ok and "21:00:00+09:00" in outcome.text
        bad = await servers.call("time", "get_current_time", {"timezone": "Not/AZone"})
        assert not bad.ok and bad.text.startswith("failed: the tool reported an error")
        assert "time: up" in servers.report({})
    finally:
        await servers.stop()


async def test_a_stdio_server_runs_in_its_own_process_group_and_stops_with_the_bot(tmp_path: Path) -> None:
    with notes_environment(tmp_path):
        config = load_config(write_config(tmp_path, stdio_sections(tmp_path)))
        servers = McpServers(config, McpServers.catalog_for(config))
        await servers.start(wait_seconds=60)
        pid = server_pid(tmp_path)
        assert os.getpgid(pid) == pid != os.getpgid(0)  # a group of its own: stopping it stops its children
        await servers.stop()
        await asyncio.to_thread(wait_until, lambda: not _alive(pid), 30, "the server to stop")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited; only its parent has not read its status yet
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_sigkill_after_approve_leaves_an_unknown_outcome_and_the_server_got_at_most_one_call(tmp_path: Path) -> None:
    with notes_environment(tmp_path, write_delay=60) as log:
        config = write_config(tmp_path, stdio_sections(tmp_path))
        console = InteractiveConsole(config)
        console.type('Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}')
        console.wait_for("[approval 1] Rex wants notes.write_note", timeout=120)
        console.type("/approve 1")
        wait_until(lambda: len(calls_received(log)) == 1, 120, "the server to receive the call")
        orphan = server_pid(tmp_path)
        console.kill()  # before the server answered (it waits 60 s)
        try:
            out = run_console(config, "/approvals\n")
        finally:
            _kill(orphan)
        assert "outcome unknown" in out and "may or may not have run" in out
        with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
            assert db.execute("SELECT status FROM approvals WHERE id = 1").fetchone() == ("unknown",)
        time.sleep(0.5)
        assert [c["tool"] for c in calls_received(log)] == ["write_note"]  # never run again by itself


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


assert NOTES_SERVER.exists()


# A stdio server that never answers `initialize` and keeps writing log notifications
# (notifications/message, MCP spec: server/utilities/logging): the client's stdout reader is nearly
# always handing a message to the session when a stop cancels it, which the mcp SDK's stdio client
# then ends with anyio's BrokenResourceError in place of the cancellation.
_CHATTY_SERVER = """
import sys
sys.stdin.readline()
line = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"warming up"}}\\n'
while True:
    sys.stdout.write(line * 50)
    sys.stdout.flush()
"""


async def test_a_stop_while_a_server_is_still_starting_ends_its_supervisor_instead_of_restarting_it(
    tmp_path: Path,
) -> None:
    """SIGTERM during a server's start (or restart) must not hang shutdown on a supervisor that took
    the stdio client's error for a crash and went on restarting the server."""
    script = tmp_path / "chatty_server.py"
    script.write_text(_CHATTY_SERVER, encoding="utf-8")
    config = load_config(
        write_config(tmp_path, {"mcp": {"servers": {"chatty": {"command": [sys.executable, str(script)]}}}})
    )
    for _ in range(5):
        servers = McpServers(config, McpServers.catalog_for(config))
        await servers.start(wait_seconds=0.5)
        assert servers.state("chatty") == "starting"
        stopping = asyncio.ensure_future(servers.stop())
        done, _pending = await asyncio.wait([stopping], timeout=30)  # a guard against a hang, not a timing
        assert done, f"the stop did not finish; the server is {servers.state('chatty')}"
        assert servers.state("chatty") == "stopped"
