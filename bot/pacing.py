"""Round starts, a few per event-loop iteration.

A round's first steps (reading its message, setting up the graph, the first pick and prompt) are
about a millisecond of CPU that never waits on anything. When many channels get a message at once,
every round is ready in the same loop iteration, and the loop runs them all back to back before it
next polls its sockets: 200 rounds stalled it for ~250 ms, and a Slack event arriving meanwhile
waited that long for its ack. Let in a few rounds per iteration instead, first come first served:
the same CPU work gets done just as fast, and between the starts the loop polls its sockets, so an
ack waits for a few rounds, not for all of them.
"""

from __future__ import annotations

import asyncio
from collections import deque

STARTS_PER_ITERATION = 2


class RoundStarts:
    def __init__(self, per_iteration: int = STARTS_PER_ITERATION) -> None:
        self.per_iteration = per_iteration
        self._started = 0  # let in since the last refill
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._refill_due = False

    async def turn(self) -> None:
        """Return when this caller may start: at once while the iteration has room and nobody waits."""
        if not self._waiting and self._started < self.per_iteration:
            self._started += 1
            self._schedule_refill()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._schedule_refill()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def _schedule_refill(self) -> None:
        if not self._refill_due:
            self._refill_due = True
            asyncio.get_running_loop().call_soon(self._refill)

    def _refill(self) -> None:
        """Once per loop iteration while anyone waits: the next few waiters go on in the next one."""
        self._refill_due = False
        self._started = 0
        while self._waiting and self._started < self.per_iteration:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter's place goes to the next one
                waiter.set_result(None)
                self._started += 1
        if self._waiting or self._started:
            self._schedule_refill()
