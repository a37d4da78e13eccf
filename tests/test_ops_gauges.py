"""/metrics reads its storage gauges at most once every GAUGE_SECONDS, however often it is scraped:
the real aiohttp app over HTTP on loopback, the real database, a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.ops import GAUGE_SECONDS, LoopWatch, Readiness, ops_web_app
from storage import inbox
from tests.test_ops import metric


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def served(open_db: Any) -> AsyncIterator[tuple[str, Any, Clock]]:
    db = await open_db()
    clock = Clock()
    runner = web.AppRunner(ops_web_app(db, Readiness(), LoopWatch(), clock=clock))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}", db, clock
    finally:
        await runner.cleanup()


async def queued(http: aiohttp.ClientSession, url: str) -> float:
    async with http.get(f"{url}/metrics") as response:
        assert response.status == 200
        return metric(await response.text(), "roundtable_queued_messages")


async def test_storage_gauges_are_read_at_most_once_every_few_seconds(served: tuple[str, Any, Clock]) -> None:
    url, db, clock = served
    async with aiohttp.ClientSession() as http:
        before = await queued(http, url)
        await inbox.accept(
            db, "EvGauge1", "console:gauges", "you", "You", "Hello?", new_channel=(["nova"], False, None)
        )

        clock.now += GAUGE_SECONDS / 2
        assert [await queued(http, url) for _ in range(5)] == [before] * 5  # as read a moment ago

        clock.now += GAUGE_SECONDS / 2
        assert await queued(http, url) == before + 1  # read again
