"""The operator's endpoints, in every mode (Slack over HTTP or Socket Mode, Discord, both):
`[ops] host` and `port` (0: off).

- GET /healthz: the process is alive and its event loop turns (a heartbeat timer ran lately).
- GET /readyz: every readiness check passes (storage open, each configured platform connected, the
  model loaded, each configured MCP server answering, and whatever else registers one); otherwise 503 with the reasons,
  one a line.
- GET /metrics: Prometheus text format from prometheus-client's registry (graph/observe.py's metrics),
  with the approval, queue and outbox gauges read from storage at a scrape, at most once every
  GAUGE_SECONDS however often (and however many at once) scrapers ask.

None of them asks who is calling: publish them to a scraper, never to everyone (docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.votes import refresh_vote_gauges
from graph.models.base import Models
from graph.observe import APPROVALS, LOOP_LAG, OUTBOX, QUEUE_DEPTH, QUEUED
from storage import outbox, usage
from storage.database import Database

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[str | None]]
"""A readiness check: None when ready, else the reason it is not (one short line)."""

HEARTBEAT_SECONDS = 0.5
STALLED_AFTER_SECONDS = 10.0  # no heartbeat for this long: the loop is stuck, /healthz says 503
GAUGE_SECONDS = 5.0  # storage gauges read at most this often: scrapes cost the database nothing more
APPROVAL_STATUSES = ("pending", "approved", "rejected", "expired", "executed", "failed", "running", "unknown")


class Readiness:
    """Named checks that /readyz runs; a part of the bot adds its own with `add` (an MCP client, say)."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        self._checks[name] = check

    async def problems(self) -> list[str]:
        found = []
        for name, check in self._checks.items():
            try:
                reason = await check()
            except Exception as exc:
                reason = f"check failed ({type(exc).__name__})"
            if reason is not None:
                found.append(f"{name}: {reason}")
        return found


def storage_check(db: Database) -> Check:
    async def check() -> str | None:
        await db.fetch_one("SELECT 1")
        return None

    return check


def model_check(models: Models) -> Check:
    """The models are built, and the embedded one loaded, before the app opens: ready once it is."""

    async def check() -> str | None:
        return None if models.description else "no model"

    return check


class LoopWatch:
    """A timer that should fire every HEARTBEAT_SECONDS: how late it ran is the event-loop lag."""

    def __init__(self) -> None:
        self.last_beat = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat(), name="ops:heartbeat")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    async def _beat(self) -> None:
        while True:
            expected = time.monotonic() + HEARTBEAT_SECONDS
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self.last_beat = time.monotonic()
            LOOP_LAG.set(max(0.0, self.last_beat - expected))

    def alive(self) -> bool:
        return time.monotonic() - self.last_beat < STALLED_AFTER_SECONDS


async def refresh_gauges(db: Database) -> None:
    """The gauges storage knows best, whichever process changed it: approvals, waiting messages, and the
    outbox's posts waiting to go out and failed for good, and each persona's share of 👍 (bot/votes.py)."""
    counts = await usage.approval_counts(db)
    for status in APPROVAL_STATUSES:
        APPROVALS.labels(status).set(counts.get(status, 0))
    depths = await usage.queue_depths(db)
    QUEUED.set(sum(depths))
    QUEUE_DEPTH.set(max(depths, default=0))
    for status, count in (await outbox.counts(db, statuses=("waiting", "failed"))).items():
        OUTBOX.labels(status).set(count)
    await refresh_vote_gauges(db)


class StorageGauges:
    """refresh_gauges at most once every GAUGE_SECONDS; scrapes that arrive meanwhile, or while a
    refresh runs, serve the gauges as last read."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.clock = clock
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        if self._lock.locked() or (self._read_at is not None and self.clock() - self._read_at < GAUGE_SECONDS):
            return
        async with self._lock:
            self._read_at = self.clock()
            await refresh_gauges(self.db)


def ops_web_app(
    db: Database, readiness: Readiness, watch: LoopWatch, clock: Callable[[], float] = time.monotonic
) -> web.Application:
    gauges = StorageGauges(db, clock)

    async def healthz(_: web.Request) -> web.Response:
        if watch.alive():
            return web.Response(text="ok\n")
        return web.Response(status=503, text="the event loop has not turned for a while\n")

    async def readyz(_: web.Request) -> web.Response:
        problems = await readiness.problems()
        if problems:
            return web.Response(status=503, text="".join(f"{p}\n" for p in problems))
        return web.Response(text="ready\n")

    async def metrics(_: web.Request) -> web.Response:
        try:
            await gauges.refresh()
        except Exception as exc:  # storage down: still serve what the process counted itself
            log.warning("metrics: storage gauges not refreshed (%s)", type(exc).__name__)
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


@asynccontextmanager
async def serving_ops(db: Database, readiness: Readiness, host: str, port: int) -> AsyncIterator[str | None]:
    """Serve the endpoints until the block ends; yields the base URL, or None when port is 0 (off)."""
    if port == 0:
        yield None
        return
    watch = LoopWatch()
    watch.start()
    runner = web.AppRunner(ops_web_app(db, readiness, watch), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        url = f"http://{bound_host}:{bound_port}"
        log.info("ops: /healthz, /readyz and /metrics on %s", url)
        yield url
    finally:
        await runner.cleanup()
        await watch.stop()
