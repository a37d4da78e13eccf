"""/metrics counts tasks by outcome, actions sent to a person by reason and mode, and mailbox drops
(issue 34): the real service and storage on the scripted double, and the real /metrics endpoint
(bot/ops.py's aiohttp app) scraped over HTTP on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from bot.inbound import Inbound
from bot.ops import LoopWatch, Readiness, ops_web_app
from storage import approvals
from storage.database import Database
from storage.records import ApprovalStatus
from tests.test_mailbox import note
from tests.test_ops import metric
from tests.test_tasks import plan_json

KEY = "console:general"
COUNTED = {
    "completed": ("roundtable_tasks_total", 'outcome="completed"'),
    "failed": ("roundtable_tasks_total", 'outcome="failed"'),
    "cancelled": ("roundtable_tasks_total", 'outcome="cancelled"'),
    "cost": ("roundtable_escalations_total", 'mode="in-the-loop",reason="cost"'),
    "in-command": ("roundtable_escalations_total", 'mode="in-command",reason="mode"'),
    "dropped": ("roundtable_mailbox_drops_total", ""),
}


@asynccontextmanager
async def scraper(db: Database) -> AsyncIterator[Any]:
    """Scrape the operator's /metrics over HTTP: each call returns the figures COUNTED names."""
    runner = web.AppRunner(ops_web_app(db, Readiness(), LoopWatch()))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        async with aiohttp.ClientSession() as http:

            async def scrape() -> dict[str, float]:
                async with http.get(f"http://{host}:{port}/metrics") as response:
                    assert response.status == 200
                    text = await response.text()
                return {what: metric(text, name, labels) for what, (name, labels) in COUNTED.items()}

            yield scrape
    finally:
        await runner.cleanup()


async def test_metrics_count_tasks_escalations_and_mailbox_drops(open_test_app: Any) -> None:
    sections = {"mailbox": {"max_pending": 1}, "approvals": {"sensitive": [], "max_cost": 1}}
    juggling = plan_json([(1, "juggling", [])])  # a capability nobody here has
    one = plan_json([(1, "research", [])])  # its step fails all three tries ([tasks] step_attempts)
    async with open_test_app(sections) as app, scraper(app.db) as scrape:
        before = await scrape()

        async def said(text: str) -> None:
            await app.service.handle(Inbound(KEY, "you", "you", text, tenant="console"))
            await app.service.wait_idle()

        await said("/task Research venues; write the invite")
        await said(f"/task One part !!plan {one} !!fail 3")
        await said(f"/task Juggle !!plan {juggling} !!plan {juggling}")  # no plan: it fails before any step
        # The announcement costs 2 > max_cost 1: the step waits for its approval, and the task is cancelled.
        await said('/task Announce the beta; review it !!act publish_post {"channel": "news", "text": "Beta!"}')
        await said("/task cancel the beta slipped")
        await said("/approvals mode in-command")
        await said('Nova, tell Zoe. !!act send_message {"to": "Zoe", "text": "Back soon"}')
        for n in ("one", "two"):
            await said(f"Sage, about item {n}. {note('rex', f'Note {n}')}")
        after = await scrape()
        asked = await approvals.with_status(app.db, ApprovalStatus.REJECTED)
        waiting = await approvals.pending(app.db, KEY)

    assert [(a.action, a.reason) for a in asked] == [("publish_post", "estimated cost 2 > max_cost 1")]
    assert [(a.action, a.reason) for a in waiting] == [("send_message", "")]
    assert {what: after[what] - before[what] for what in COUNTED} == {
        "completed": 1,
        "failed": 2,
        "cancelled": 1,
        "cost": 1,
        "in-command": 1,
        "dropped": 1,
    }
