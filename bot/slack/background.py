"""Work started after Slack has been acknowledged: tracked, so it can be awaited, and never fatal."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class BackgroundWork:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(self._guarded(work, name), name=name)
        self._tasks.add(task)  # the event loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self, grace_seconds: float = 5.0) -> None:
        """Let running work finish (it is short: a name lookup and a database write), then cancel the rest."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace_seconds)
        for task in self._tasks:
            task.cancel()
        await self.wait_idle()

    @staticmethod
    async def _guarded(work: Coroutine[Any, Any, None], name: str) -> None:
        try:
            await work
        except Exception:
            log.exception("Slack work %s failed", name)
