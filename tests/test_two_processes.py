"""Two real bot processes on one PostgreSQL database, both fed the same Slack events over HTTP.

Each event must be answered exactly once, by whichever process records it first, and each
channel's replies must come in the order its messages were sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from tests.conftest import REPO, write_config
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET, envelope, message, signed_headers

CHANNELS = ("C0ALPHA", "C0BRAVO", "C0CHARLIE", "C0DELTA", "C0ECHO")
PER_CHANNEL = 10  # 5 channels x 10 = 50 events
QUOTED = re.compile(r'"Sage, (C0\w+) message (\d+)"')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def wait_for_port(port: int, process: asyncio.subprocess.Process, timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if process.returncode is not None:
            raise AssertionError(f"bot exited with {process.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    raise AssertionError(f"bot did not listen on {port}")


async def start_bot(directory: Path, database_url: str, api_url: str) -> tuple[asyncio.subprocess.Process, str]:
    """A bot on Slack over HTTP; its bot token is `xoxb-<directory name>`, so its posts can be told apart."""
    directory.mkdir()
    port = free_port()
    config = write_config(directory, {
        "storage": {"url": database_url},
        "slack": {"api_base_url": api_url, "host": "127.0.0.1", "port": port},
    })
    env = {**os.environ, "SLACK_BOT_TOKEN": f"xoxb-{directory.name}", "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    env.pop("SLACK_APP_TOKEN", None)
    env.pop("DISCORD_TOKEN", None)
    with open(directory / "bot.log", "wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config), cwd=REPO, env=env, stdout=log, stderr=log,
        )
    await wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}/slack/events"


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


async def test_two_processes_answer_each_of_50_events_once_in_order(tmp_path, postgres_server, fake_slack):
    database_url = await postgres_server.new_database()
    bots = [await start_bot(tmp_path / name, database_url, fake_slack.api_url) for name in ("first", "second")]
    recorded = await asyncpg.create_pool(database_url, min_size=1, max_size=len(CHANNELS))
    try:
        async with aiohttp.ClientSession() as http:

            async def deliver_to_both(body: str, first: int) -> None:
                for _, url in (bots[first], bots[1 - first]):  # whoever hears first usually records it
                    headers = signed_headers(body, "application/json")
                    async with http.post(url, data=body.encode(), headers=headers) as response:
                        assert response.status == 200

            async def feed_channel(channel: str) -> None:
                for n in range(PER_CHANNEL):
                    event_id = f"Ev{channel}{n:02d}"
                    text = f"Sage, {channel} message {n}"
                    event = message(text, f"17000000{n:02d}.{CHANNELS.index(channel):06d}", channel=channel)
                    await deliver_to_both(json.dumps(envelope(event, event_id)), first=n % 2)
                    # The next message is sent once this one is recorded, as a person would type it.
                    async with asyncio.timeout(30):
                        while not await recorded.fetchval("SELECT COUNT(*) FROM lines WHERE text = $1", text):
                            await asyncio.sleep(0.02)

            await asyncio.gather(*(feed_channel(channel) for channel in CHANNELS))

        def replies() -> list[tuple[str, int]]:
            found = (QUOTED.search(post.get("text", "")) for post in fake_slack.delivered_posts())
            return [(m.group(1), int(m.group(2))) for m in found if m]

        await fake_slack.wait_until(lambda: len(replies()) >= len(CHANNELS) * PER_CHANNEL, timeout=90)
        await asyncio.sleep(1.0)  # a duplicate answer would arrive now
        answered = replies()
        assert len(answered) == len(CHANNELS) * PER_CHANNEL
        for channel in CHANNELS:
            assert [n for c, n in answered if c == channel] == list(range(PER_CHANNEL))
        senders = {call.headers.get("Authorization") for call in fake_slack.calls_to("chat.postMessage")}
        assert senders == {"Bearer xoxb-first", "Bearer xoxb-second"}  # both processes did part of the work
    finally:
        await recorded.close()
        for process, _ in bots:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                raise AssertionError("a bot did not stop within 15 s of SIGTERM") from None
