"""Nothing a person did is lost on a stop: the real console bot in subprocesses, killed or stopped
at the worst moment, then started again on the same data."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

from tests.conftest import run_console, write_config
from tests.interactive_console import InteractiveConsole

REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
SLOW_ROUND = "Sage, take your time. !!slow 4"


def restart(config: Path, tmp_path: Path, script: str = "/approvals\n") -> str:
    return run_console(config, script)


def database(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3")


def approval_status(tmp_path: Path) -> str:
    with database(tmp_path) as db:
        return str(db.execute("SELECT status FROM approvals WHERE id = 1").fetchone()[0])


def wait_until_its_round_started(tmp_path: Path, text: str, timeout: float = 30) -> None:
    """Until the line is recorded and off the inbox: its round is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with database(tmp_path) as db:
            row = db.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = l.id) FROM lines l WHERE l.text = ?",
                (text,),
            ).fetchone()
        if row is not None and row[0]:
            return
        time.sleep(0.05)
    raise AssertionError(f"the round for {text!r} never started")


def approve_while_the_channel_is_busy(config: Path) -> InteractiveConsole:
    """Ask for an approval, start a slow round, and approve while it runs: the run is queued behind it."""
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for("[approval 1] Nova wants publish_post")
    console.type(SLOW_ROUND)
    wait_until_its_round_started(config.parent, SLOW_ROUND)
    console.type("/approve 1")
    console.wait_for("[system] Approved #1.")
    return console


def test_an_approved_action_killed_before_it_ran_runs_once_after_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = approve_while_the_channel_is_busy(config)
    console.stop(signal.SIGKILL)
    assert approval_status(tmp_path) == "approved"  # recorded, never run

    after = restart(config, tmp_path)
    assert after.count("[Nova in #news] We launched!") == 1
    assert "[action 1] executed: posted in #news" in after
    assert approval_status(tmp_path) == "executed"
    again = restart(config, tmp_path)  # a second start runs nothing
    assert "[Nova in #news]" not in again


def test_sigterm_drains_the_running_round_and_nothing_runs_twice(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = approve_while_the_channel_is_busy(config)
    code, before, err = console.stop(signal.SIGTERM)
    assert code == 0, err
    assert "Traceback" not in err
    assert "[Sage] " in before  # the running round finished within the grace period

    after = restart(config, tmp_path)
    assert (before + after).count("[Nova in #news] We launched!") == 1
    assert approval_status(tmp_path) == "executed"


def test_sigterm_hands_back_a_round_that_had_said_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bot": {"shutdown_grace_seconds": 0.5}})
    console = InteractiveConsole(config)
    console.wait_for("[system] Type a message")
    console.type("Sage, think this through. !!slow 10")
    wait_until_its_round_started(tmp_path, "Sage, think this through. !!slow 10")
    code, before, err = console.stop(signal.SIGTERM, timeout=15)
    assert code == 0, err
    assert "[Sage]" not in before

    after = restart(config, tmp_path, "")
    assert after.count("[Sage] ") == 1  # answered at the next start, once


def test_a_run_cut_short_is_reported_not_repeated_and_an_approver_can_retry_it(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for("[approval 1] Nova wants publish_post")
    console.stop(signal.SIGKILL)
    # The state a kill leaves between the platform call and its outcome: approved, run claimed.
    with database(tmp_path) as db:
        db.execute(
            "UPDATE approvals SET status = 'running', runner = 'a-process-that-is-gone', "
            "decided_by = 'you', started_at = 1 WHERE id = 1"
        )

    after = restart(config, tmp_path)
    assert "[Nova in #news]" not in after  # not run blindly a second time
    assert "[system] approvers: Approval #1 (publish_post) was running when the bot stopped" in after
    why = "the look-up could not finish: the console's posts carry no marker to look them up by"
    unknown = f"outcome unknown: the bot stopped while it ran ({why})"
    assert f"[action 1] {unknown}: it may or may not have run" in after  # why it could not be looked up
    assert approval_status(tmp_path) == "unknown"

    retried = restart(config, tmp_path, "/approvals retry 1\n/approvals retry 1\n")
    assert retried.count("[Nova in #news] We launched!") == 1
    assert "[action 1] executed: posted in #news" in retried
    assert "has no unknown outcome (executed)" in retried
    assert approval_status(tmp_path) == "executed"


def test_an_unknown_outcome_can_be_closed_without_running_it(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for("[approval 1] Nova wants publish_post")
    console.stop(signal.SIGKILL)
    with database(tmp_path) as db:
        db.execute("UPDATE approvals SET status = 'running', runner = 'gone', decided_by = 'you' WHERE id = 1")

    closed = restart(config, tmp_path, "/approvals close 1\n")
    assert "[system] Closed #1 without running it again." in closed
    assert "[action 1] closed by you without running again" in closed
    assert "[Nova in #news]" not in closed
    assert approval_status(tmp_path) == "failed"


def test_a_retry_cut_off_by_a_stop_before_it_ran_runs_once_after_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for("[approval 1] Nova wants publish_post")
    console.stop(signal.SIGKILL)
    with database(tmp_path) as db:
        db.execute("UPDATE approvals SET status = 'running', runner = 'gone', decided_by = 'you' WHERE id = 1")
    restart(config, tmp_path)  # unknown, and its flow has ended
    with database(tmp_path) as db:  # what /approvals retry 1 leaves, had the bot stopped before the run began
        db.execute("UPDATE approvals SET status = 'approved', result = NULL, runner = NULL WHERE id = 1")

    after = restart(config, tmp_path)
    assert after.count("[Nova in #news] We launched!") == 1
    assert approval_status(tmp_path) == "executed"
    assert "[Nova in #news]" not in restart(config, tmp_path)  # and once only


def test_a_cut_schedule_post_is_scheduled_again_and_approvals_says_how_recovery_went(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    args = '{"at": "2030-01-01T09:00:00+00:00", "channel": "news", "text": "We launched!"}'
    console.type(f"Nova, schedule it. !!act schedule_post {args}")
    console.wait_for("[approval 1] Nova wants schedule_post")
    console.stop(signal.SIGKILL)
    with database(tmp_path) as db:  # cut while it ran: the timer may or may not have been added
        db.execute("UPDATE approvals SET status = 'running', runner = 'gone', decided_by = 'you' WHERE id = 1")

    listed = restart(config, tmp_path)
    assert approval_status(tmp_path) == "executed"
    assert "Finished by start-up recovery" in listed
    assert "#1 schedule_post: executed, scheduled for 2030-01-01 09:00 UTC in #news (after the restart:" in listed
