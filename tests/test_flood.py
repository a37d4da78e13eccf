"""Flood limits: the sliding windows on their own, then a flooding user on the service, the console,
Slack (the bolt app over signed HTTP) and Discord (the discord.py client against the fake)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from bot.flood import FloodGate, SlidingWindow
from bot.inbound import Inbound
from storage import history
from storage.database import Database
from tests.conftest import REPO, run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import HUMAN
from tests.recording_port import RecordingPort
from tests.slack_harness import APPROVER, KEY, StartSlack

NO_APPROVERS = {"approvals": {"approvers": {"console": [], "slack": [], "discord": []}}}


def limits(user: int, channel: int = 100) -> dict[str, dict[str, Any]]:
    return {"limits": {"user_messages_per_minute": user, "channel_rounds_per_minute": channel}}


# -- the windows, with time passed in --------------------------------------------------------------


def test_a_sliding_window_forgets_events_a_minute_old() -> None:
    window = SlidingWindow(2)
    window.add("k", 0.0)
    window.add("k", 30.0)
    assert window.full("k", 59.9) and not window.full("other", 59.9)
    assert not window.full("k", 60.0)  # the first event has left the window
    window.add("k", 60.0)
    assert window.full("k", 89.9) and not window.full("k", 90.0)


def test_a_sliding_window_forgets_idle_keys() -> None:
    window = SlidingWindow(1)
    for n in range(1000):
        window.add(f"user{n}", float(n) / 100)
    window.add("late", 200.0)
    assert len(window._times) == 1


def test_past_the_user_limit_one_notice_a_minute_and_refused_messages_count_for_nothing() -> None:
    gate = FloodGate(user_messages_per_minute=3, channel_rounds_per_minute=100)
    verdicts = [gate.admit("c", "ana", t) for t in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)]
    assert [v.starts_round for v in verdicts] == [True, True, True, False, False, False]
    assert [v.notice is not None for v in verdicts] == [False, False, False, True, False, False]
    assert "3 messages" in (verdicts[3].notice or "")
    assert gate.admit("c", "bea", 6.0).starts_round  # others are not held back
    assert gate.admit("other", "ana", 6.0).starts_round  # nor is Ana in another channel
    later = [gate.admit("c", "ana", t) for t in (60.0, 60.5, 61.5, 62.5, 63.5)]  # each answered one leaves in turn
    assert [v.starts_round for v in later] == [True, False, True, True, False]
    assert [v.notice is not None for v in later] == [False, False, False, False, True]  # a minute after the first


def test_past_the_channel_limit_everyone_waits_but_exempt_senders() -> None:
    gate = FloodGate(user_messages_per_minute=10, channel_rounds_per_minute=2)
    assert gate.admit("c", "ana", 0.0).starts_round and gate.admit("c", "bea", 1.0).starts_round
    refused = gate.admit("c", "cai", 2.0)
    assert not refused.starts_round and "2 rounds" in (refused.notice or "")
    assert gate.admit("c", "boss", 3.0, exempt=True).starts_round
    assert gate.admit("c", "boss", 4.0, exempt=True).starts_round
    assert gate.admit("d", "cai", 5.0).starts_round


def test_a_withdrawn_admission_counts_for_nothing() -> None:
    gate = FloodGate(user_messages_per_minute=1, channel_rounds_per_minute=100)
    gate.withdraw(gate.admit("c", "ana", 0.0))  # a duplicate event: not stored after all
    assert gate.admit("c", "ana", 1.0).starts_round
    notice = gate.admit("c", "ana", 2.0)
    gate.withdraw(notice)
    assert gate.admit("c", "ana", 3.0).notice == notice.notice


# -- the service, with the recording port ----------------------------------------------------------


async def test_a_flooding_user_is_answered_up_to_the_limit_then_told_once_and_nothing_is_lost(
    open_test_app: Any, port: RecordingPort
) -> None:
    key = "console:flood"
    async with open_test_app({**NO_APPROVERS, **limits(3)}) as app:
        replies = []
        for n in range(1, 7):
            replies.append(await app.service.handle(Inbound(key, "ana", "Ana", f"Sage, point {n}")))
            await app.service.wait_idle(key)
        prompt = "\n".join(str(m.content) for m in await app.engine.prompt_for(key, "nova"))
        lines = await history.recent_channel_lines(app.db, key, limit=50)

    assert port.speakers(key) == ["sage"] * 3
    assert [r is None for r in replies] == [True, True, True, False, True, True]
    notice = replies[3]
    assert notice is not None and not notice.ok and not notice.announced and "3 messages" in notice.reply
    assert not port.notices()  # nothing said in the channel
    assert [line.text for line in lines if line.author_name == "Ana"] == [f"Sage, point {n}" for n in range(1, 7)]
    for n in range(1, 7):
        assert f"Sage, point {n}" in prompt  # Nova witnessed every line, answered or not


async def test_an_approver_is_not_limited(open_test_app: Any, port: RecordingPort) -> None:
    key = "console:boss"
    async with open_test_app({**limits(2, channel=2), "approvals": {"approvers": {"console": ["boss"]}}}) as app:
        for n in range(5):
            assert await app.service.handle(Inbound(key, "boss", "Boss", f"Rex, item {n}")) is None
            await app.service.wait_idle(key)
        assert await app.service.handle(Inbound(key, "ana", "Ana", "Rex, and mine?")) is not None  # the channel is full

    assert port.speakers(key) == ["rex"] * 5


# -- the console, as a user runs it ----------------------------------------------------------------


def test_the_console_says_slow_down_once_and_the_prompt_still_has_every_line(tmp_path) -> None:
    config = write_config(tmp_path, {**NO_APPROVERS, **limits(2)})
    stdout = run_console(config, "".join(f"Sage, point {n}\n" for n in range(1, 6)))
    lines = stdout.splitlines()[1:]
    tags = [line.split("]")[0] + "]" for line in lines]
    assert tags == ["[you]", "[Sage]", "[you]", "[Sage]", "[you]", "[system]", "[you]", "[you]"]
    assert lines[5].startswith("[system] Slow down a little: you have sent 2 messages here in the last minute.")

    prompt = subprocess.run(
        [sys.executable, "-m", "bot", "prompt", "--config", str(config), "--channel", "general", "--persona", "sage"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert prompt.returncode == 0, prompt.stderr
    assert all(f"Sage, point {n}" in prompt.stdout for n in range(1, 6))


# -- Slack and Discord: the notice goes privately to the sender ------------------------------------


async def test_slack_tells_the_flooding_user_privately_and_not_the_approver(start_slack: StartSlack) -> None:
    async with start_slack(limits(2)) as slack:
        for n in range(4):
            await slack.say(f"Sage, point {n}", f"1700000300.00000{n}")
        for n in range(4):
            await slack.say(f"Rex, point {n}", f"1700000301.00000{n}", user=APPROVER)
        lines = await history.recent_channel_lines(slack.bot.roundtable.db, KEY, limit=50)

    assert [post["username"] for post in slack.posts()] == ["Sage", "Sage", "Rex", "Rex", "Rex", "Rex"]
    [notice] = slack.ephemerals()
    assert notice["user"] == HUMAN and notice["text"].startswith("Slow down a little")
    assert sum(line.text.startswith("Sage, point") for line in lines) == 4


async def test_discord_answers_the_flooding_message_with_a_reply_that_pings_nobody(
    fake: FakeDiscord,
    open_bot: Any,  # noqa: F811
) -> None:
    async with open_bot(sections=limits(1)) as bot:
        await fake.send_message("Nova, one")
        await fake.wait_for_webhook_executes()
        await settle(bot)
        await fake.send_message("Nova, two")
        await fake.wait_for_calls("POST", rf"/channels/{p.TEXT_CHANNEL_ID}/messages")
        await fake.send_message("Nova, three")
        lines = await ana_lines(bot.app.db, 3)
        await settle(bot)
        [reply] = fake.find_calls("POST", rf"/channels/{p.TEXT_CHANNEL_ID}/messages")

    assert reply.json["content"].startswith("Slow down a little: you have sent 1 message here")
    assert reply.json["message_reference"]["message_id"]
    assert reply.json["allowed_mentions"]["replied_user"] is False
    assert len(fake.webhook_executes()) == 1
    assert lines == ["Nova, one", "Nova, two", "Nova, three"]


async def ana_lines(db: Database, count: int) -> list[str]:
    """Ana's stored lines in #general once there are `count` of them (polled, at most 5 s)."""
    for _ in range(250):
        lines = await history.recent_channel_lines(db, f"discord:{p.TEXT_CHANNEL_ID}", limit=50)
        if len(texts := [line.text for line in lines if line.author_name == "Ana"]) >= count:
            return texts
        await asyncio.sleep(0.02)
    raise AssertionError(f"Ana's lines never reached {count}")
