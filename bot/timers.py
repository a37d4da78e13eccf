"""Durable timers on APScheduler 3: approval expiries and scheduled posts survive a restart.

Jobs are stored by reference to the functions below, so the running app registers itself here.
`misfire_grace_time=None` makes a timer that fell due while the bot was down fire at the next start.

Processes sharing one database share one job store, which APScheduler 3 cannot run from several
schedulers at once. So every process adds jobs, but only the process that holds the "timers" claim
runs them: the others keep their scheduler paused and try for the claim again every few seconds,
so when the runner stops, another takes over and fires whatever fell due meanwhile.

The process that runs timers also prunes, at start and every hour, the processed event ids (the
dedupe of redeliveries), keeping a day of them: platforms redeliver within minutes, so the table
stays bounded by one day's events; and the outbox's sent posts, keeping a week of them. That job
lives in memory and is added again at every start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta, timezone
from typing import Protocol

from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_PAUSED

from graph.actions import ActionCall
from storage import history, outbox, votes
from storage.database import Database
from storage.locks import SETUP_LOCK, TIMERS_CLAIM

log = logging.getLogger(__name__)

PROCESSED_EVENTS_KEPT_SECONDS = 24 * 3600
SENT_POSTS_KEPT_SECONDS = 7 * 24 * 3600
VOTABLE_POSTS_KEPT_SECONDS = 30 * 24 * 3600  # a persona's post takes votes this long (its votes stay)
PRUNE_EVERY_SECONDS = 3600
PRUNE_JOB = "forget-processed-events"


class TimerTarget(Protocol):
    async def expire_approval(self, approval_id: int) -> None: ...

    async def publish_scheduled(self, channel_key: str, persona_id: str, name: str, args: dict) -> None: ...


_target: TimerTarget | None = None


async def expire_approval(approval_id: int) -> None:
    if _target is None:
        log.warning("approval %s timed out with no app running", approval_id)
        return
    await _target.expire_approval(approval_id)


async def publish_scheduled(channel_key: str, persona_id: str, name: str, args: dict) -> None:
    if _target is None:
        log.warning("scheduled %s for %s fell due with no app running", name, persona_id)
        return
    await _target.publish_scheduled(channel_key, persona_id, name, args)


def _when(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=timezone.utc)


class DurableTimers:
    """The graph's Timers port, on an AsyncIOScheduler with a SQLAlchemy job store.

    `shared` says other processes may use the same job store: then this one polls, both for the
    claim and, once it runs jobs, for jobs the others added.
    """

    def __init__(
        self,
        jobstore_url: str,
        db: Database,
        *,
        shared: bool = False,
        poll_seconds: float = 2.0,
        engine_options: dict[str, int] | None = None,
    ) -> None:
        jobstore = SQLAlchemyJobStore(url=jobstore_url, engine_options=engine_options)
        self.scheduler = AsyncIOScheduler(
            jobstores={"default": jobstore, "upkeep": MemoryJobStore()},
            job_defaults={"misfire_grace_time": None, "coalesce": True},
            timezone=timezone.utc,
        )
        self._db = db
        self._shared = shared
        self._poll_seconds = poll_seconds
        self._poller: asyncio.Task[None] | None = None
        self._pruning: asyncio.Task[None] | None = None

    @property
    def running_jobs(self) -> bool:
        """True when this process is the one that fires timers."""
        return self.scheduler.running and self.scheduler.state != STATE_PAUSED

    async def start(self, target: TimerTarget) -> None:
        global _target
        _target = target
        async with self._db.exclusive(SETUP_LOCK):  # starting creates the job table if it is missing
            self.scheduler.start(paused=True)
        self.scheduler.add_job(
            self._start_pruning,
            "interval",
            seconds=PRUNE_EVERY_SECONDS,
            next_run_time=datetime.now(timezone.utc) + timedelta(seconds=PRUNE_EVERY_SECONDS),
            id=PRUNE_JOB,
            jobstore="upkeep",
            replace_existing=True,
        )
        if await self._db.claim(TIMERS_CLAIM):
            self.scheduler.resume()
            await self._start_pruning()  # at start, then hourly
        if self._shared:
            self._poller = asyncio.create_task(self._poll(), name="timers:poll")

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_seconds)
            try:
                if self.running_jobs:
                    self.scheduler.wakeup()  # another process may have added a job
                elif await self._db.claim(TIMERS_CLAIM):
                    log.info("this process now runs the timers")
                    self.scheduler.resume()
                    await self._start_pruning()
            except Exception:
                log.exception("timer poll failed; trying again in %.0f s", self._poll_seconds)

    async def _start_pruning(self) -> None:
        """The pruning runs in a task of ours, started when this process takes the timers and then by
        the hourly job, which returns at once: a stop cancels our task quietly, where a job that is
        still running (or not yet started) when APScheduler shuts down is logged with a traceback."""
        if self._pruning is None or self._pruning.done():
            self._pruning = asyncio.create_task(self.forget_old_events(), name="timers:forget-processed-events")

    async def forget_old_events(self) -> None:
        try:
            forgotten = await history.forget_processed_events(self._db, PROCESSED_EVENTS_KEPT_SECONDS)
            sent = await outbox.forget_sent(self._db, SENT_POSTS_KEPT_SECONDS)
            await votes.forget_posts(self._db, VOTABLE_POSTS_KEPT_SECONDS)
        except Exception as exc:
            log.warning("pruning old records failed (%s); trying again in an hour", type(exc).__name__)
            return
        log.info("forgot %d processed event ids older than a day, %d posts sent over a week ago", forgotten, sent)

    async def shutdown(self) -> None:
        global _target
        for task in (self._poller, self._pruning):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        _target = None

    def schedule_expiry(self, approval_id: int, at: float) -> None:
        self.scheduler.add_job(
            "bot.timers:expire_approval",
            "date",
            run_date=_when(at),
            args=[approval_id],
            id=f"approval-{approval_id}",
            replace_existing=True,
            misfire_grace_time=None,
        )

    def schedule_post(self, at: float, channel_key: str, persona_id: str, call: ActionCall) -> str:
        post = {"channel": call.args["channel"], "text": call.args["text"]}
        self.scheduler.add_job(
            "bot.timers:publish_scheduled",
            "date",
            run_date=_when(at),
            args=[channel_key, persona_id, "publish_post", post],
            id=f"post-{call.call_id}",
            replace_existing=True,
            misfire_grace_time=None,
        )
        return f"scheduled for {_when(at):%Y-%m-%d %H:%M} UTC in #{post['channel'].lstrip('#')}"
