"""Processed event ids (the dedupe of redeliveries) are pruned at start and every hour, keeping a day;
the outbox's sent posts, keeping a week (and a task's plan, whose edits find the message through it)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from bot.timers import PRUNE_JOB
from storage import events
from storage.database import Database


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def event_ids(db: Database) -> set[str]:
    return {row["event_id"] for row in await db.fetch_all("SELECT event_id FROM processed_events")}


async def test_ids_older_than_a_day_are_forgotten_and_newer_ones_kept(open_test_app) -> None:
    async with open_test_app() as app:
        job = app.timers.scheduler.get_job(PRUNE_JOB)
        assert job is not None and job.trigger.interval == timedelta(hours=1)
        await app.service.wait_idle()
        assert await events.claim(app.db, "slack-trigger:fresh")
        two_days_ago = time.time() - 2 * 24 * 3600
        async with app.db.transaction() as tx:
            await tx.execute_many(
                "INSERT INTO processed_events (event_id, seen_at) VALUES (?, ?)",
                [(f"slack:T1:C1:{n}", two_days_ago) for n in range(500)],
            )
        assert len(await event_ids(app.db)) == 501

    async with open_test_app() as restarted:
        deadline = time.monotonic() + 10
        while len(await event_ids(restarted.db)) > 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await event_ids(restarted.db) == {"slack-trigger:fresh"}
        assert not await events.claim(restarted.db, "slack-trigger:fresh")  # a day-old replay is still refused


async def test_posts_sent_over_a_week_ago_are_forgotten_and_waiting_failed_or_plan_posts_kept(open_test_app) -> None:
    eight_days_ago, tomorrow = time.time() - 8 * 24 * 3600, time.time() + 24 * 3600  # the waiting one is not due
    async with open_test_app() as app:
        await app.service.wait_idle()
        async with app.db.transaction() as tx:
            for n, (kind, status) in enumerate(
                [("post", "sent"), ("notice", "sent"), ("plan", "sent"), ("post", "failed"), ("post", "waiting")]
            ):
                await tx.execute(
                    "INSERT INTO outbox (conversation, platform, channel_key, kind, payload, status, created_at, "
                    "next_try_at, finished_at) VALUES (?, 'slack', ?, ?, '{}', ?, ?, ?, ?)",
                    (f"slack:T1:C{n}", f"slack:T1:C{n}", kind, status, eight_days_ago, tomorrow, eight_days_ago),
                )

    async with open_test_app() as restarted:
        deadline = time.monotonic() + 10
        while len(await outbox_kinds(restarted.db)) > 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await outbox_kinds(restarted.db) == [("plan", "sent"), ("post", "failed"), ("post", "waiting")]


async def outbox_kinds(db: Database) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in await db.fetch_all("SELECT kind, status FROM outbox ORDER BY id")]
