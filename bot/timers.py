"""Durable timers on APScheduler 3: approval expiries and scheduled posts survive a restart.

Jobs are stored by reference to the functions below, so the running app registers itself here.
`misfire_grace_time=None` makes a timer that fell due while the bot was down fire at the next start.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from graph.actions import ActionCall

log = logging.getLogger(__name__)


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
    """The graph's Timers port, on an AsyncIOScheduler with a SQLAlchemy job store."""

    def __init__(self, database: Path) -> None:
        self.scheduler = AsyncIOScheduler(
            jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{database}")},
            job_defaults={"misfire_grace_time": None, "coalesce": True},
            timezone=timezone.utc,
        )

    def start(self, target: TimerTarget) -> None:
        global _target
        _target = target
        self.scheduler.start()

    def shutdown(self) -> None:
        global _target
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        _target = None

    def schedule_expiry(self, approval_id: int, at: float) -> None:
        self.scheduler.add_job(
            "bot.timers:expire_approval", "date", run_date=_when(at), args=[approval_id],
            id=f"approval-{approval_id}", replace_existing=True, misfire_grace_time=None,
        )

    def cancel_expiry(self, approval_id: int) -> None:
        job = self.scheduler.get_job(f"approval-{approval_id}")
        if job is not None:
            job.remove()

    def schedule_post(self, at: float, channel_key: str, persona_id: str, call: ActionCall) -> str:
        post = {"channel": call.args["channel"], "text": call.args["text"]}
        self.scheduler.add_job(
            "bot.timers:publish_scheduled", "date", run_date=_when(at),
            args=[channel_key, persona_id, "publish_post", post],
            id=f"post-{call.call_id}", replace_existing=True, misfire_grace_time=None,
        )
        return f"scheduled for {_when(at):%Y-%m-%d %H:%M} UTC in #{post['channel'].lstrip('#')}"
