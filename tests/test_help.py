"""Help on every surface: the console's /help, Slack's and Discord's /roundtable help, each listing every
command that surface takes, one line each. Each surface runs for real, as in test_hardening.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

from bot.commands import PARSERS
from bot.slack.commands import SLASH_COMMANDS
from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_payloads import HUMAN, message
from tests.slack_harness import SlackHarness

LINE = re.compile(r"^(?:@Roundtable )?/([a-z]+)\b.* — \S")


def listed(help_text: str) -> list[str]:
    """The command names of a help text, one per line after its heading; every line must be a command."""
    heading, *lines = help_text.splitlines()
    assert heading == "Commands:"
    matches = [LINE.match(line) for line in lines]
    assert all(matches), [line for line, m in zip(lines, matches, strict=True) if not m]
    return [m[1] for m in matches if m]


def test_console_help_lists_every_typed_command(tmp_path) -> None:
    script = tmp_path / "script.txt"
    script.write_text("/help\nNova, hello\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(write_config(tmp_path)), "--script", str(script)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()[1:]  # after the banner
    assert lines[0] == "[you] /help"
    shown = [line.removeprefix("[system] ") for line in lines[1 : lines.index("[you] Nova, hello")]]
    assert all(line.startswith("[system] ") for line in lines[1 : len(shown) + 1])
    names = listed("\n".join(shown))
    assert sorted(names) == sorted(PARSERS)  # every command parse_command takes, once
    assert {"help", "moderate", "approve", "scene"} <= set(names) and "roundtable" not in names
    assert lines[-1].startswith("[Nova] ")


async def test_slack_roundtable_help_answers_privately_with_every_command(slack: SlackHarness) -> None:
    status, body = await slack.command("/roundtable", "help")
    assert status == 200
    [reply] = slack.replies_to_command()
    assert reply["response_type"] == "ephemeral"
    names = listed(reply["text"])
    assert {c.lstrip("/") for c in SLASH_COMMANDS} <= set(names)
    assert set(PARSERS) <= set(names)  # typed commands too, written after @Roundtable
    assert "/moderate on [max_turns]" in reply["text"] and "@Roundtable /scene TEXT" in reply["text"]
    assert slack.posts() == []  # nobody else sees it

    status, body = await slack.command("/roundtable", "dance")
    assert (status, json.loads(body)) == (200, {"response_type": "ephemeral", "text": "usage: /roundtable help"})

    typed = {**message(f"<@{BOT_USER_ID}> /help", "1700000200.000001"), "type": "app_mention"}
    assert await slack.send_event(typed, "EvHelp") == 200
    await slack.bot.wait_idle()
    [(user, text)] = [(e["user"], e["text"]) for e in slack.ephemerals()]
    assert user == HUMAN and text == reply["text"]


async def test_discord_roundtable_help_lists_every_registered_command(fake: FakeDiscord, open_bot: Any) -> None:  # noqa: F811
    async with open_bot():
        asked = await fake.send_slash_command("roundtable", {"action": "help"}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
        registered = {c["name"] for c in fake.commands}

    assert followup.json["flags"] == 64  # ephemeral
    names = listed(followup.json["content"])
    assert sorted(names) == sorted(registered)
    assert "roundtable" in names and "approve" not in names  # Discord decides with buttons, not typed commands
