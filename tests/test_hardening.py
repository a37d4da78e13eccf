"""Malformed numbers in commands, on every surface: one line back, never a traceback.

Each surface runs for real: the console as `python -m bot` replaying a script, Slack through the bolt
app over signed HTTP, Discord through the discord.py client against the fake gateway.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bot.discord_bot.client import USE_SLASH_COMMANDS
from storage import channels
from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_payloads import HUMAN, message
from tests.slack_harness import KEY, SlackHarness
from tests.test_discord import callback_of

MODERATE_USAGE = "usage: /moderate on [max_turns] | off | status | pause | resume | reasons on|off | prompt TEXT|reset | recruit on|off (max_turns is a whole number from 1 to 50)"
TYPED = {
    "/approve ²": "usage: /approve N",
    "/reject ① x": "usage: /reject N [incident] [feedback]",
    "/moderate on ²": MODERATE_USAGE,
    "/approve 99999999999999999999999": "usage: /approve N",
    "/reject #18446744073709551616 too big": "usage: /reject N [incident] [feedback]",
    "/moderate on ５": MODERATE_USAGE,  # a fullwidth digit
}
BAD_MAX_TURNS = ["²", "99999999999999999999999", "٣", "+7", "7_0"]


def test_the_console_answers_each_with_its_usage_and_carries_on(tmp_path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("\n".join([*TYPED, "Sage, still there?"]) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(write_config(tmp_path)), "--script", str(script)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()[1:]  # after the banner
    expected = [line for command, usage in TYPED.items() for line in (f"[you] {command}", f"[system] {usage}")]
    assert lines[: len(expected)] == expected
    assert lines[len(expected)] == "[you] Sage, still there?" and lines[-1].startswith("[Sage] ")


async def test_slack_answers_slash_commands_and_typed_commands_privately(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    for max_turns in BAD_MAX_TURNS:
        status, body = await slack.command("/moderate", f"on {max_turns}")
        assert (status, json.loads(body)) == (200, {"response_type": "ephemeral", "text": MODERATE_USAGE})
    for number, typed in enumerate(TYPED):
        mention = {**message(f"<@{BOT_USER_ID}> {typed}", f"1700000100.{number:06d}"), "type": "app_mention"}
        assert await slack.send_event(mention, f"EvTyped{number}") == 200
    await slack.bot.wait_idle()

    answers = [(e["user"], e["text"]) for e in slack.ephemerals()]
    assert sorted(answers) == sorted((HUMAN, usage) for usage in TYPED.values())  # events run concurrently
    assert slack.posts() == []
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is None or not channel.moderated
    assert "Traceback" not in caplog.text


async def test_discord_answers_typed_and_slash_commands_with_one_line(
    fake: FakeDiscord,
    open_bot: Any,
    caplog: pytest.LogCaptureFixture,  # noqa: F811
) -> None:
    async with open_bot() as bot:
        for typed in TYPED:
            await fake.send_message(typed)
        replies = await fake.wait_for_calls("POST", rf"/channels/{p.TEXT_CHANNEL_ID}/messages", len(TYPED))
        answers = [
            await callback_of(fake, await fake.send_slash_command("moderate", {"mode": "on", "max_turns": bad}))
            for bad in BAD_MAX_TURNS
        ]
        channel = await channels.get_channel(bot.app.db, f"discord:{p.TEXT_CHANNEL_ID}")

    assert [reply.json["content"] for reply in replies] == [USE_SLASH_COMMANDS] * len(TYPED)
    assert [(a["type"], a["data"]["flags"], a["data"]["content"]) for a in answers] == [(4, 64, MODERATE_USAGE)] * len(
        BAD_MAX_TURNS
    )
    assert channel is None or not channel.moderated
    assert "Traceback" not in caplog.text
