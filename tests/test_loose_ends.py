"""Things a reader or a user trips on (issue 23): /moderate resume on a channel that is not paused,
`python -m bot` from a deployment folder with its own personas/, a console script on standard input,
and a quiet shutdown (no CancelledError traceback from the event-pruning job)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bot.approval_desk import Actor
from bot.command_values import PauseReplies
from storage import channels, history
from tests.conftest import REPO, write_config

KEY = "console:loose"
ANA = Actor("u1", "Ana")


async def test_resume_on_a_channel_that_is_not_paused_says_so_and_stores_nothing(app, port) -> None:
    await app.service.run_command(KEY, PauseReplies(True), actor=ANA)
    resumed = await app.service.run_command(KEY, PauseReplies(False), actor=ANA)
    lines_before = await history.recent_channel_lines(app.db, KEY, limit=50)
    events_before = list(port.events)

    again = await app.service.run_command(KEY, PauseReplies(False), actor=ANA)

    assert resumed.ok and resumed.announced
    assert (again.reply, again.ok, again.announced) == ("Replies are not paused here; nothing to resume.", False, False)
    assert await history.recent_channel_lines(app.db, KEY, limit=50) == lines_before  # no marker
    assert port.events == events_before  # nothing announced
    channel = await channels.get_channel(app.db, KEY)
    assert channel is not None and not channel.paused


def deployment_folder(tmp_path: Path) -> Path:
    """A user's folder: config.toml and its own personas/*.toml, as docs/getting-started.md suggests."""
    personas = tmp_path / "personas"
    shutil.copytree(REPO / "personas", personas, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    nova = personas / "nova.toml"
    nova.write_text(nova.read_text().replace("Picture the bigger version of this:", "Straight from this folder:"))
    (tmp_path / "config.toml").write_text('[llm]\nprovider = "scripted"\n')
    return tmp_path


def console(folder: Path, *script_args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", "--config", "config.toml", "console", *script_args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
    )


def test_python_m_bot_works_from_a_folder_with_its_own_personas(tmp_path: Path) -> None:
    folder = deployment_folder(tmp_path)
    (folder / "script.txt").write_text("Hello Nova\n")
    result = console(folder, "--script", "script.txt")
    assert result.returncode == 0, result.stderr
    assert '[Nova] Straight from this folder: "Hello Nova" is worth a second thought.' in result.stdout.splitlines()


def test_a_script_on_standard_input_is_read_with_dash_or_dev_stdin(tmp_path: Path) -> None:
    folder = deployment_folder(tmp_path)
    for script in ("-", "/dev/stdin"):
        result = console(folder, "--script", script, stdin="# a comment\n/moderate status\nHello Nova\n")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert "[you] /moderate status" in lines and "[you] Hello Nova" in lines, (script, lines)
        assert any(line.startswith("[Nova] Straight from this folder:") for line in lines), (script, lines)
        assert "CancelledError" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_missing_script_is_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(config), "--script", str(tmp_path / "nope.txt")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope.txt'}: script file not found"]


async def test_stopping_right_after_start_logs_no_traceback_from_the_pruning_job(open_test_app, caplog) -> None:
    for _ in range(3):  # the pruning starts with the timers: a stop at once may catch it running
        async with open_test_app():
            pass
    failures = [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]
