"""Two real bot processes on one PostgreSQL database, talking to a fake Slack over HTTP.

Each event must be answered exactly once, by whichever process records it first, and each
channel's replies must come in the order its messages were sent. An approval requested through
one process can be decided through the other, and a timeout fires in one process only.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import asyncpg
import pytest

from tests.conftest import REPO, write_config
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET, button_click, buttons_of, envelope, message, signed_headers
from tests.ports import free_port

CHANNELS = ("C0ALPHA", "C0BRAVO", "C0CHARLIE", "C0DELTA", "C0ECHO")
PER_CHANNEL = 10  # 5 channels x 10 = 50 events
QUOTED = re.compile(r'"Sage, (C0\w+) message (\d+)"')
APPROVER = "UAPPROVER"
REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'


async def wait_for_port(port: int, process: asyncio.subprocess.Process, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while True:
            if process.returncode is not None:
                raise AssertionError(f"bot exited with {process.returncode}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.close()
            return


@dataclass
class Bot:
    """One `python -m bot` on Slack over HTTP; its token is `xoxb-<name>`, so its calls can be told apart."""

    name: str
    process: asyncio.subprocess.Process
    events_url: str

    @property
    def authorization(self) -> str:
        return f"Bearer xoxb-{self.name}"


async def start_bot(directory: Path, sections: dict[str, dict[str, Any]]) -> Bot:
    directory.mkdir()
    port = free_port()
    config = write_config(directory, {**sections, "slack": {**sections["slack"], "host": "127.0.0.1", "port": port}})
    env = {**os.environ, "SLACK_BOT_TOKEN": f"xoxb-{directory.name}", "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    for unused in ("SLACK_APP_TOKEN", "DISCORD_TOKEN", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        env.pop(unused, None)
    with open(directory / "bot.log", "wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(config),
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=log,
        )
    await wait_for_port(port, process)
    return Bot(directory.name, process, f"http://127.0.0.1:{port}/slack/events")


@dataclass
class TwoBots:
    first: Bot
    second: Bot
    fake: FakeSlackApi
    http: aiohttp.ClientSession
    db: asyncpg.Pool

    async def send(self, bot: Bot, body: str, content_type: str) -> None:
        async with self.http.post(
            bot.events_url, data=body.encode(), headers=signed_headers(body, content_type)
        ) as response:
            assert response.status == 200

    async def send_event(self, bot: Bot, event: dict[str, Any], event_id: str) -> None:
        await self.send(bot, json.dumps(envelope(event, event_id)), "application/json")

    async def click(self, bot: Bot, request: dict[str, Any], action_id: str) -> None:
        payload = button_click(
            request, action_id, APPROVER, response_url=self.fake.response_url("click"), trigger="t.1"
        )
        await self.send(bot, urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 60) -> None:
        await self.fake.wait_until(condition, timeout=timeout)

    async def audit(self) -> list[str]:
        return [row["event"] for row in await self.db.fetch("SELECT event FROM audit_log ORDER BY id")]

    def approval_requests(self) -> list[dict[str, Any]]:
        posts = [c for c in self.fake.calls_to("chat.postMessage") if c.status == 200 and c.error is None]
        return [{**c.args, "ts": c.answer["ts"]} for c in posts if buttons_of(c.args)]

    def posts_to(self, channel: str) -> list[Any]:
        return [c for c in self.fake.calls_to("chat.postMessage") if c.args.get("channel") == channel]


Launcher = Callable[..., Awaitable[TwoBots]]


@pytest.fixture
async def two_bots(tmp_path, postgres_server) -> AsyncIterator[Launcher]:
    """`await two_bots(sections)`: two bots on one new database; the first holds the timers claim."""
    started: list[Bot] = []
    async with FakeSlackApi() as fake, aiohttp.ClientSession() as http:
        database_url = await postgres_server.new_database()
        pool = await asyncpg.create_pool(database_url, min_size=1, max_size=len(CHANNELS))

        async def launch(sections: dict[str, dict[str, Any]] | None = None) -> TwoBots:
            merged = {**(sections or {}), "storage": {"url": database_url}, "slack": {"api_base_url": fake.api_url}}
            for name in ("first", "second"):  # one after the other, so "first" surely takes the claim
                started.append(await start_bot(tmp_path / name, merged))
            return TwoBots(started[0], started[1], fake, http, pool)

        try:
            yield launch
        finally:
            await pool.close()
            for bot in started:
                if bot.process.returncode is None:
                    bot.process.terminate()
                    try:
                        await asyncio.wait_for(bot.process.wait(), 15)
                    except TimeoutError:
                        bot.process.kill()
                        raise AssertionError(f"{bot.name} did not stop within 15 s of SIGTERM") from None


async def test_two_processes_answer_each_of_50_events_once_in_order(two_bots):
    bots = await two_bots()

    async def feed_channel(channel: str) -> None:
        for n in range(PER_CHANNEL):
            text = f"Sage, {channel} message {n}"
            event = message(text, f"17000000{n:02d}.{CHANNELS.index(channel):06d}", channel=channel)
            # Both hear every event, in turn first; either may record it, and either may answer it.
            order = (bots.first, bots.second) if n % 2 else (bots.second, bots.first)
            for bot in order:
                await bots.send_event(bot, event, f"Ev{channel}{n:02d}")
            # The next message is sent once this one is recorded, as a person would type it.
            async with asyncio.timeout(30):
                while not await bots.db.fetchval("SELECT COUNT(*) FROM lines WHERE text = $1", text):
                    await asyncio.sleep(0.02)

    await asyncio.gather(*(feed_channel(channel) for channel in CHANNELS))

    def replies() -> list[tuple[str, int]]:
        found = (QUOTED.search(post.get("text", "")) for post in bots.fake.delivered_posts())
        return [(m.group(1), int(m.group(2))) for m in found if m]

    await bots.wait_for(lambda: len(replies()) >= len(CHANNELS) * PER_CHANNEL, timeout=90)
    await asyncio.sleep(1.0)  # a duplicate answer would arrive now
    answered = replies()
    assert len(answered) == len(CHANNELS) * PER_CHANNEL
    for channel in CHANNELS:
        assert [n for c, n in answered if c == channel] == list(range(PER_CHANNEL))


async def test_an_approval_requested_in_one_process_is_decided_and_resumed_in_the_other(two_bots):
    bots = await two_bots({"approvals": {"approvers": {"slack": [APPROVER]}}})
    await bots.send_event(bots.second, message(REQUEST, "1700000100.000100"), "EvRequest")
    await bots.wait_for(lambda: len(bots.approval_requests()) == 1)
    [request] = bots.approval_requests()

    await bots.click(bots.first, request, "approval_approve")
    await bots.wait_for(lambda: len(bots.posts_to("news")) == 1)
    [published] = bots.posts_to("news")
    assert published.args["text"] == "We launched!"
    assert published.headers["Authorization"] == bots.first.authorization  # the deciding process ran it
    await bots.click(bots.second, request, "approval_approve")  # a stale second click, elsewhere
    await asyncio.sleep(1.0)
    assert len(bots.posts_to("news")) == 1
    assert await bots.audit() == ["requested", "approved", "executed"]


async def test_a_timeout_fires_once_in_the_process_that_runs_timers_and_survives_its_death(two_bots):
    bots = await two_bots({"approvals": {"approvers": {"slack": [APPROVER]}, "timeout_minutes": 0.05}})  # 3 s
    await bots.send_event(bots.second, message(REQUEST, "1700000200.000100"), "EvFirstRequest")
    await bots.wait_for(lambda: len(bots.approval_requests()) == 1)

    def expiries() -> list[Any]:
        return [
            c for c in bots.fake.calls_to("chat.update") if c.args.get("text", "").endswith("nobody decided in time.")
        ]

    await bots.wait_for(lambda: len(expiries()) == 1, timeout=30)
    assert expiries()[0].headers["Authorization"] == bots.first.authorization  # requested in second, fired in first

    bots.first.process.kill()  # the timer-running process dies; the second must take over its timers
    await bots.first.process.wait()
    await bots.send_event(bots.second, message(REQUEST, "1700000300.000100"), "EvSecondRequest")
    await bots.wait_for(lambda: len(expiries()) == 2, timeout=30)
    assert expiries()[1].headers["Authorization"] == bots.second.authorization
    await asyncio.sleep(2.5)  # a second firing of either timeout would show now
    assert len(expiries()) == 2
    assert await bots.audit() == ["requested", "expired", "requested", "expired"]
