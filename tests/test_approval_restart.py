"""A pending approval survives SIGKILL: the real console bot in subprocesses."""

import sqlite3
import time
from pathlib import Path

from tests.conftest import run_console, write_config
from tests.interactive_console import InteractiveConsole

REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}\n'


def start_and_request(config: Path) -> None:
    """Start the interactive console, ask for an approval, wait for it to show, then SIGKILL the bot."""
    console = InteractiveConsole(config)
    console.type(REQUEST.rstrip("\n"))
    console.wait_for("[approval 1] Nova wants publish_post", timeout=60)
    console.kill()


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
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM held_batches").fetchone() == (0,)  # its flow ended: nothing to resume


def test_an_overdue_timeout_expires_the_approval_after_restart(tmp_path):
    config = write_config(tmp_path, {"approvals": {"timeout_minutes": 0.02}})  # 1.2 s
    start_and_request(config)
    time.sleep(1.5)  # the bot is down while the timeout falls due
    out = run_script(config, tmp_path, "/approvals\n")
    assert "[action 1] expired" in out
    assert "[Nova in #news]" not in out
    assert audit_events(tmp_path) == ["requested", "expired"]
