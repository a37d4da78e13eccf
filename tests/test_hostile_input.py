"""Hostile command text never costs an event: thousands of nested brackets or an overlong command get
one line back and a 200, on Slack (the real bolt app over signed HTTP) and on the console."""

from __future__ import annotations

import pytest

from bot.commands import MAX_COMMAND_CHARS
from tests.conftest import run_console, write_config
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_payloads import HUMAN, message
from tests.slack_harness import SlackHarness

BRACKETS = "/revise 1 " + "[" * 5000 + "]" * 5000
TOO_DEEP = "Approval #1 is unchanged: the arguments are nested more than 32 levels deep."
TOO_LONG = f"That command is longer than {MAX_COMMAND_CHARS:,} characters; nothing was done."
OVERLONG = "/revise 1 " + '{"text": "' + "x" * MAX_COMMAND_CHARS + '"}'


async def test_slack_answers_nested_brackets_and_an_overlong_command_with_one_line_and_a_200(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    for number, typed in enumerate((BRACKETS, OVERLONG)):
        mention = {**message(f"<@{BOT_USER_ID}> {typed}", f"1700000400.{number:06d}"), "type": "app_mention"}
        assert await slack.send_event(mention, f"EvHostile{number}") == 200
    await slack.bot.wait_idle()

    answers = sorted((e["user"], e["text"]) for e in slack.ephemerals())
    assert answers == sorted([(HUMAN, TOO_DEEP), (HUMAN, TOO_LONG)])
    assert slack.posts() == []
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text


def test_the_console_answers_nested_brackets_with_one_line_and_carries_on(tmp_path) -> None:
    transcript = run_console(write_config(tmp_path), f"{BRACKETS}\nSage, still there?\n")

    lines = transcript.splitlines()[1:]  # after the banner
    assert lines[1] == f"[system] {TOO_DEEP}"
    assert lines[2] == "[you] Sage, still there?" and lines[-1].startswith("[Sage] ")
