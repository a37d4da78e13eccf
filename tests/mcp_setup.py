"""What the MCP tests share: the personas with tools, the notes server (tests/mcp_notes_server.py)
as config.toml declares it over stdio or streamable HTTP, and what that server received."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tests.ports import free_port

NOTES_SERVER = REPO / "tests" / "mcp_notes_server.py"
# Rex may use every tool of the notes server, Sage only its read-only one; Nova and Pixel none.
TOOLS = {"rex": '["notes"]', "sage": '["notes.read_note"]'}
ENV = ["NOTES_CALL_LOG", "NOTES_PID_FILE", "NOTES_WRITE_DELAY", "NOTES_DELETE"]


def personas_with_tools(directory: Path) -> Path:
    """The repo's personas, with `tools` added to Rex and Sage."""
    directory.mkdir(parents=True, exist_ok=True)
    for source in (REPO / "personas").glob("*.toml"):
        text = source.read_text(encoding="utf-8")
        if source.stem in TOOLS:
            text += f"\ntools = {TOOLS[source.stem]}\n"
        (directory / source.name).write_text(text, encoding="utf-8")
    return directory


@contextmanager
def notes_environment(tmp_path: Path, write_delay: float = 0) -> Iterator[Path]:
    """The environment the server reads (by name, through [mcp.servers.notes] env): its call log."""
    log = tmp_path / "notes-calls.jsonl"
    saved = {name: os.environ.get(name) for name in ENV}
    os.environ.update(
        NOTES_CALL_LOG=str(log), NOTES_PID_FILE=str(tmp_path / "notes.pid"), NOTES_WRITE_DELAY=str(write_delay)
    )
    try:
        yield log
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stdio_sections(tmp_path: Path, **server: Any) -> dict[str, dict[str, Any]]:
    return {
        "bot": {"personas_dir": str(personas_with_tools(tmp_path / "personas"))},
        "mcp": {
            "servers": {
                "notes": {
                    "command": [sys.executable, str(NOTES_SERVER), "stdio"],
                    "env": ENV,
                    "read_only": ["read_note"],
                    **server,
                }
            }
        },
    }


def calls_received(log: Path) -> list[dict[str, Any]]:
    """Every tools/call the server received, in order: {"tool", "args", "pid"}."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def server_pid(tmp_path: Path) -> int:
    return int((tmp_path / "notes.pid").read_text(encoding="utf-8"))


def has_exited(pid: int) -> bool:
    """Whether the process is gone (or a zombie: it can neither receive nor log anything more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")


def wait_until(condition: Any, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def http_notes_server(tmp_path: Path) -> Iterator[str]:
    """The notes server over streamable HTTP on 127.0.0.1; its URL once it accepts connections."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(NOTES_SERVER), "http", str(port)],
        env={**os.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def accepting() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_until(accepting, what="the HTTP MCP server to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
