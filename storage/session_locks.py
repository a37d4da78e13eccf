"""A process's advisory locks, all held by one PostgreSQL session: one connection, however many locks.

PostgreSQL ties a session-level advisory lock to the connection that took it: only that connection
can release it, and PostgreSQL releases every lock of a connection that closes or is lost (a killed
process holds none). So every lock this process takes goes through one connection of its own, one
statement at a time, and a round holds no connection while it runs, only its lock.

A session's advisory locks are re-entrant, so the process keeps its own exclusion too: a block
waiting for a name another task of this process holds waits on an asyncio lock, and a name held by
another process is tried again when that process releases it (a NOTIFY on `UNLOCKED`) or, should
it die without a word, every POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import asyncpg

log = logging.getLogger(__name__)

UNLOCKED = "roundtable_unlocked"  # the NOTIFY channel a released lock's name is sent on
POLL_SECONDS = 0.5  # how often a lock is tried again when no release was heard (its holder died)
TRY = "SELECT pg_try_advisory_lock(hashtextextended($1, 0))"
RELEASE = f"SELECT pg_advisory_unlock(hashtextextended($1, 0)), pg_notify('{UNLOCKED}', $1)"


class SessionLocks:
    def __init__(self, connect: Callable[[], Awaitable[asyncpg.Connection]]) -> None:
        self._connect = connect
        self._conn: asyncpg.Connection | None = None
        self._statement = asyncio.Lock()  # one statement at a time on the connection
        self._local: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._released: dict[str, asyncio.Event] = {}  # names waited for, set when a release is heard
        self._held: set[str] = set()  # names this session holds: blocks running and claims
        self._claims: set[str] = set()
        self._cleanups: set[asyncio.Task[None]] = set()

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        lost_claims = sorted(self._claims)
        if self._conn is not None:  # lost: PostgreSQL released everything it held
            log.error("the advisory lock connection was lost; PostgreSQL released its %d locks", len(self._held))
            self._held.clear()
            self._claims.clear()
        conn = await self._connect()
        await conn.add_listener(UNLOCKED, self._heard_release)
        self._conn = conn
        for name in lost_claims:  # held for the process's life: taken again, unless another took it meanwhile
            if await conn.fetchval(TRY, name):
                self._held.add(name)
                self._claims.add(name)
            else:
                log.error("%s was taken by another process while this one's lock connection was down", name)
        return conn

    def _heard_release(self, _conn: object, _pid: int, _channel: str, name: str) -> None:
        if (released := self._released.get(name)) is not None:
            released.set()

    async def _fetch(self, sql: str, name: str) -> bool:
        async with self._statement:
            conn = await self._connection()
            return bool(await conn.fetchval(sql, name))

    async def _try(self, name: str) -> bool:
        """Take `name` if no other session holds it. A cancel while PostgreSQL answers still releases
        a lock it granted: none is left behind on the shared connection."""
        attempt = asyncio.ensure_future(self._fetch(TRY, name))
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            attempt.add_done_callback(lambda done: self._release_if_taken(name, done))
            raise

    def _release_if_taken(self, name: str, attempt: asyncio.Future[bool]) -> None:
        if not attempt.cancelled() and attempt.exception() is None and attempt.result():
            cleanup = asyncio.create_task(self._unlock(name))
            self._cleanups.add(cleanup)
            cleanup.add_done_callback(self._cleanups.discard)

    async def _unlock(self, name: str) -> None:
        await self._fetch(RELEASE, name)

    async def _release(self, name: str) -> None:
        """Shielded: a block cancelled on its way out still releases its lock."""
        self._held.discard(name)
        try:
            await asyncio.shield(self._fetch(RELEASE, name))
        except Exception:
            if self._conn is not None and not self._conn.is_closed():
                raise
            log.warning("%s went with the lost lock connection", name)  # released by PostgreSQL

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        local = self._local.get(name)
        if local is None:
            local = self._local[name] = asyncio.Lock()
        async with local:
            try:
                while True:
                    released = self._released.setdefault(name, asyncio.Event())
                    released.clear()  # before the try: a release between the try and the wait is heard
                    if await self._try(name):
                        break
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(released.wait(), POLL_SECONDS)
            finally:
                self._released.pop(name, None)
            self._held.add(name)
            try:
                yield
            finally:
                await self._release(name)

    async def _connected(self) -> None:
        """A lost connection replaced (and its claims taken again) before what this process holds is read."""
        async with self._statement:
            await self._connection()

    async def claim(self, name: str) -> bool:
        await self._connected()
        if name in self._claims:
            return True
        if name in self._held or not await self._try(name):
            return False
        self._held.add(name)
        self._claims.add(name)
        return True

    async def held(self, name: str) -> bool:
        await self._connected()
        if name in self._held:
            return True
        if await self._try(name):
            await self._fetch(RELEASE, name)
            return False
        return True

    async def close(self) -> None:
        """Closing the session releases every lock it holds."""
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)
        if self._conn is not None:
            await self._conn.close()
        self._held.clear()
        self._claims.clear()
