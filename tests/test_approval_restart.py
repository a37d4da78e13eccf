"""A pending approval survives SIGKILL: the real console bot in subprocesses."""

import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, run_console, write_config

REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}\n'


def start_and_request(config: Path) -> None:
    """Start the interactive console, ask for an approval, wait for it to show, then SIGKILL the bot."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "console", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(REQUEST)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
            seen.append(line)
            if line.startswith("[approval 1] Nova wants publish_post"):
                break
    else:
        proc.kill()
        raise AssertionError(f"no approval request shown: {seen}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def run_script(config: Path, tmp_path: Path, text: str) -> str:
    return run_console(config, text)


def audit_events(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT event FROM audit_log ORDER BY id")]


def test_approval_after_sigkill_executes_once_and_completes_the_turn(tmp_path):
    config = write_config(tmp_path)
    start_and_request(config)
    out = run_script(config, tmp_path, "/approve 1\n/approve 1\n")
    assert "[Nova in #news] We launched!" in out
    assert "[action 1] executed: posted in #news" in out
    assert out.count("[Nova in #news]") == 1
    assert "already decided" in out
    lines = out.splitlines()
    after_action = lines[lines.index("[action 1] executed: posted in #news") + 1 :]
    assert after_action[0].startswith("[Nova] ")  # the persona finished its turn after the action
    assert audit_events(tmp_path) == ["requested", "approved", "executed"]


def test_an_overdue_timeout_expires_the_approval_after_restart(tmp_path):
    config = write_config(tmp_path, {"approvals": {"timeout_minutes": 0.02}})  # 1.2 s
    start_and_request(config)
    time.sleep(1.5)  # the bot is down while the timeout falls due
    out = run_script(config, tmp_path, "/approvals\n")
    assert "[action 1] expired" in out
    assert "[Nova in #news]" not in out
    assert audit_events(tmp_path) == ["requested", "expired"]
