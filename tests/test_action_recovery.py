"""An approved action cut short by a SIGKILL is found or finished after the restart, never lost and
never doubled: the real bot (`python -m bot`, Slack HTTP mode) against the fake Slack Web API, which
kills the process the moment the action's post reaches it, before or after Slack takes it. Nothing
is timed: the kill is a condition of the wire."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.slack.approval_blocks import APPROVE_ACTION, RETRY_ACTION
from tests.cluster import BotProcess
from tests.conftest import write_config
from tests.fakes.slack_api import FakeSlackApi, KillOn
from tests.fakes.slack_payloads import button_click, buttons_of, envelope, message, signed_headers
from tests.mcp_setup import calls_received, notes_environment, server_pid, stdio_sections
from tests.ports import free_port

APPROVER = "UAPPROVER"
ACTIONS = {
    "publish_post": {"channel": "news", "text": "We launched!"},
    "send_message": {"to": "#news", "text": "We launched!"},
}


def asking(action: str) -> str:
    return f"Nova, do it. !!act {action} {json.dumps(ACTIONS[action])}"


def bot_for(tmp_path: Path, fake: FakeSlackApi) -> BotProcess:
    port = free_port()
    sections: dict[str, dict[str, Any]] = {
        "slack": {"api_base_url": fake.api_url, "host": "127.0.0.1", "port": port},
        "approvals": {"approvers": {"slack": [APPROVER]}},
    }
    return BotProcess("bot", tmp_path, port, write_config(tmp_path, sections))


async def send(http: aiohttp.ClientSession, bot: BotProcess, body: str, content_type: str) -> None:
    async with http.post(bot.url, data=body.encode(), headers=signed_headers(body, content_type)) as answer:
        assert answer.status == 200


async def say(http: aiohttp.ClientSession, bot: BotProcess, text: str, number: int) -> None:
    event = message(text, f"17000007{number:02d}.000100")
    await send(http, bot, json.dumps(envelope(event, f"EvRecovery{number}")), "application/json")


def requests(fake: FakeSlackApi) -> list[dict[str, Any]]:
    """The approval requests posted, as Slack holds them (with their ts)."""
    posted = [c for c in fake.calls_to("chat.postMessage") if c.status == 200 and c.error is None]
    return [{**c.args, "ts": c.answer["ts"]} for c in posted if buttons_of(c.args)]


async def click(http: aiohttp.ClientSession, bot: BotProcess, fake: FakeSlackApi, request: dict[str, Any]) -> None:
    payload = button_click(
        request, APPROVE_ACTION, APPROVER, response_url=fake.response_url("click"), trigger="trigger.click"
    )
    await send(http, bot, urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


def the_post(args: dict[str, Any]) -> bool:
    return args.get("text") == "We launched!" and args.get("username") == "Nova"


def launches(fake: FakeSlackApi) -> int:
    """How many of the action's posts Slack holds in #news."""
    return sum(1 for (channel, _), m in fake.messages.items() if channel == "C0NEWS" and m["text"] == "We launched!")


def statuses(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT status FROM approvals ORDER BY id")]


def news() -> FakeSlackApi:
    fake = FakeSlackApi()
    fake.channel_names["C0NEWS"] = "news"  # the channel the action names, as conversations.list lists it
    return fake


@pytest.mark.parametrize("action", ["publish_post", "send_message"])
@pytest.mark.parametrize("posted", [False, True], ids=["killed before the post", "killed after the post"])
async def test_an_approved_post_cut_by_a_kill_exists_once_and_is_executed_after_the_restart(
    tmp_path: Path, action: str, posted: bool
) -> None:
    async with news() as fake, aiohttp.ClientSession() as http:
        bot = bot_for(tmp_path, fake)
        await bot.start()
        try:
            await say(http, bot, asking(action), 1)
            await fake.wait_until(lambda: len(requests(fake)) == 1, timeout=60)
            assert bot.process is not None
            fake.kill_on = KillOn("chat.postMessage", the_post, bot.process.pid, after_doing=posted)
            await click(http, bot, fake, requests(fake)[0])
            await fake.wait_until(lambda: fake.killed == 1, timeout=60)
        finally:
            await bot.kill()
        assert statuses(tmp_path) == ["running"]  # claimed, its outcome never recorded
        assert launches(fake) == (1 if posted else 0)

        await bot.start()
        try:
            await fake.wait_until(lambda: statuses(tmp_path) == ["executed"], timeout=60)
        finally:
            await bot.stop()
    assert launches(fake) == 1
    done = "posted in #news" if action == "publish_post" else "sent in #news"
    way = "found already posted, not posted again" if posted else "not posted before the stop, posted now"
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        audited = db.execute("SELECT event, actor, detail FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
    assert audited == ("executed", "start-up recovery", f"{done} (after the restart: {way})")  # which way it went


@pytest.mark.parametrize("posted", [False, True], ids=["killed before the post", "killed after the post"])
async def test_two_approved_posts_with_the_same_text_are_each_posted_once(tmp_path: Path, posted: bool) -> None:
    async with news() as fake, aiohttp.ClientSession() as http:
        bot = bot_for(tmp_path, fake)
        await bot.start()
        try:
            await say(http, bot, asking("publish_post"), 1)
            await fake.wait_until(lambda: len(requests(fake)) == 1, timeout=60)
            await click(http, bot, fake, requests(fake)[0])
            await fake.wait_until(lambda: statuses(tmp_path) == ["executed"], timeout=60)
            await say(http, bot, asking("publish_post"), 2)
            await fake.wait_until(lambda: len(requests(fake)) == 2, timeout=60)
            assert bot.process is not None
            fake.kill_on = KillOn("chat.postMessage", the_post, bot.process.pid, after_doing=posted)
            await click(http, bot, fake, requests(fake)[1])
            await fake.wait_until(lambda: fake.killed == 1, timeout=60)
        finally:
            await bot.kill()
        assert statuses(tmp_path) == ["executed", "running"]
        assert launches(fake) == (2 if posted else 1)

        await bot.start()
        try:
            await fake.wait_until(lambda: statuses(tmp_path) == ["executed", "executed"], timeout=60)
        finally:
            await bot.stop()
    assert launches(fake) == 2  # the same words twice, each approval's post once


# -- an MCP tool's effect cannot be looked up: an approver settles it, once --------------------------


def settling(fake: FakeSlackApi) -> list[dict[str, Any]]:
    """The request as chat.update last showed it with [Run again] (an unknown outcome), as a click reads it."""
    updates = [c.args for c in fake.calls_to("chat.update") if c.status == 200]
    return [u for u in updates if any(b["action_id"] == RETRY_ACTION for b in buttons_of(u))]


def told_privately(fake: FakeSlackApi) -> list[str]:
    return [str(c.args.get("text")) for c in fake.calls_to("chat.postEphemeral")]


async def press(
    http: aiohttp.ClientSession, bot: BotProcess, fake: FakeSlackApi, request: dict[str, Any], action: str, n: int
) -> None:
    payload = button_click(request, action, APPROVER, response_url=fake.response_url(f"c{n}"), trigger=f"t{n}")
    await send(http, bot, urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


async def test_an_mcp_tool_cut_by_a_kill_is_unknown_and_one_click_of_run_again_runs_it_once(tmp_path: Path) -> None:
    with notes_environment(tmp_path, write_delay=60) as log:
        async with news() as fake, aiohttp.ClientSession() as http:
            port = free_port()
            sections: dict[str, dict[str, Any]] = {
                "slack": {"api_base_url": fake.api_url, "host": "127.0.0.1", "port": port},
                "approvals": {"approvers": {"slack": [APPROVER]}},
                **stdio_sections(tmp_path),
            }
            bot = BotProcess("bot", tmp_path, port, write_config(tmp_path, sections))
            await bot.start()
            try:
                await say(http, bot, 'Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}', 1)
                await fake.wait_until(lambda: len(requests(fake)) == 1, timeout=60)
                await click(http, bot, fake, requests(fake)[0])
                await wait_for(lambda: len(calls_received(log)) == 1)  # the server is running it: kill now
                orphan = server_pid(tmp_path)
            finally:
                await bot.kill()
            os.killpg(orphan, signal.SIGKILL)
            os.environ["NOTES_WRITE_DELAY"] = "0"  # the restarted server answers at once (restored after)

            await bot.start()
            try:
                await fake.wait_until(lambda: bool(settling(fake)), timeout=60)
                assert statuses(tmp_path) == ["unknown"]
                shown = settling(fake)[-1]
                assert "an MCP tool's effect cannot be looked up" in json.dumps(shown["blocks"])  # says why
                await press(http, bot, fake, shown, RETRY_ACTION, 1)
                await wait_for(lambda: statuses(tmp_path) == ["executed"])
                await press(http, bot, fake, shown, RETRY_ACTION, 2)  # a second click of the same button
                await fake.wait_until(lambda: any("no unknown outcome" in t for t in told_privately(fake)), 60)
            finally:
                await bot.stop()
            await bot.start()  # and a restart runs nothing more
            try:
                await say(http, bot, "Nova, anything new?", 2)
                await fake.wait_until(lambda: any(p.get("username") == "Nova" for p in fake.delivered_posts()), 60)
            finally:
                await bot.stop()
    assert [call["tool"] for call in calls_received(log)] == ["write_note", "write_note"]  # cut, then run again once
    assert statuses(tmp_path) == ["executed"]
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        events = [row[0] for row in db.execute("SELECT event FROM audit_log WHERE approval_id = 1 ORDER BY id")]
    assert events == ["requested", "approved", "failed", "approved", "executed"]  # unknown, retried once, ran


async def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


# -- approved, not started: it runs at once after the restart ----------------------------------------


def round_started(tmp_path: Path, text: str) -> bool:
    """The line is recorded and off the inbox: its round is running."""
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        row = db.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = l.id) FROM lines l WHERE l.text = ?", (text,)
        ).fetchone()
    return row is not None and bool(row[0])


async def test_an_approved_action_not_started_at_the_kill_runs_first_and_at_once_after_the_restart(
    tmp_path: Path,
) -> None:
    slow = "Sage, take your time. !!slow 5"
    async with news() as fake, aiohttp.ClientSession() as http:
        bot = bot_for(tmp_path, fake)
        await bot.start()
        try:
            await say(http, bot, asking("publish_post"), 1)
            await fake.wait_until(lambda: len(requests(fake)) == 1, timeout=60)
            await say(http, bot, slow, 2)
            await wait_for(lambda: round_started(tmp_path, slow))  # the channel is busy: the run must wait
            await click(http, bot, fake, requests(fake)[0])
            await wait_for(lambda: statuses(tmp_path) == ["approved"])  # decided, its run not begun: kill now
        finally:
            await bot.kill()
        before = len(fake.calls)

        await bot.start()
        try:
            restarted = asyncio.get_running_loop().time()
            await say(http, bot, "Sage, and what else?", 3)  # a new line in the same channel
            await fake.wait_until(lambda: launches(fake) == 1, timeout=10)  # within 10 s of the restart
            ran_after = asyncio.get_running_loop().time() - restarted
            await fake.wait_until(lambda: sum(p.get("username") == "Sage" for p in posts_since(fake, before)) >= 2, 60)
        finally:
            await bot.stop()
    assert ran_after < 10
    after = [p for p in posts_since(fake, before) if p.get("username") in ("Nova", "Sage")]
    assert after[0]["text"] == "We launched!"  # before the channel's rounds went on
    assert statuses(tmp_path) == ["executed"]


def posts_since(fake: FakeSlackApi, calls: int) -> list[dict[str, Any]]:
    return [c.args for c in fake.calls[calls:] if c.method == "chat.postMessage" and c.status == 200 and not c.error]


async def test_a_long_post_cut_between_its_messages_posts_only_the_missing_one_after_the_restart(
    tmp_path: Path,
) -> None:
    long_text = "alpha " * 520 + "bravo " * 100  # two Slack messages: the second holds every "bravo"
    asked = f"Nova, do it. !!act publish_post {json.dumps({'channel': 'news', 'text': long_text.strip()})}"

    def second_piece(args: dict[str, Any]) -> bool:
        return args.get("username") == "Nova" and "bravo" in str(args.get("text"))

    def in_news() -> list[str]:
        return [str(m["text"]) for (channel, _), m in sorted(fake.messages.items()) if channel == "C0NEWS"]

    async with news() as fake, aiohttp.ClientSession() as http:
        bot = bot_for(tmp_path, fake)
        await bot.start()
        try:
            await say(http, bot, asked, 1)
            await fake.wait_until(lambda: len(requests(fake)) == 1, timeout=60)
            assert bot.process is not None
            fake.kill_on = KillOn("chat.postMessage", second_piece, bot.process.pid, after_doing=False)
            await click(http, bot, fake, requests(fake)[0])
            await fake.wait_until(lambda: fake.killed == 1, timeout=60)
        finally:
            await bot.kill()
        assert len(in_news()) == 1  # the first message only

        await bot.start()
        try:
            await fake.wait_until(lambda: statuses(tmp_path) == ["executed"], timeout=60)
        finally:
            await bot.stop()
    posted = in_news()
    assert len(posted) == 2 and "bravo" not in posted[0] and "bravo" in posted[1]  # each once, in order
    assert " ".join(" ".join(posted).split()) == long_text.strip()
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        [result] = db.execute("SELECT result FROM approvals").fetchone()
    assert result == "posted in #news (after the restart: 1 of 2 messages had been posted, the other 1 posted now)"
