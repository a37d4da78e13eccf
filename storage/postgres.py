"""The PostgreSQL backend, through asyncpg: pooled connections, advisory locks, the same migrations.

Several bot processes may share one database. Advisory locks make that safe beyond plain
transactions: `Tx.serialize` takes one for a transaction, `exclusive` holds one for as long as a
block runs (a channel's round), and `claim` keeps one until close. The last two are held by one
session of the process's own (storage.session_locks), so a round holds a connection only while one
of its statements runs, and a process's connections stay few however many rounds it runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import lru_cache

import asyncpg

from storage.database import Params, Row, joined, storable
from storage.dialects import migration_sql
from storage.locks import SETUP_LOCK
from storage.migrations import MIGRATIONS
from storage.session_locks import SessionLocks

# Statements and transactions, each holding a connection only while it runs; none waits on a model.
QUERY_POOL_SIZE = 5
LOCK_CONNECTIONS = 1  # every exclusive block and claim of the process (storage.session_locks)


@lru_cache(maxsize=512)
def numbered(sql: str) -> str:
    """`?` placeholders as PostgreSQL's $1, $2, …"""
    counter = iter(range(1, 10_000))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def _rows_changed(status: str) -> int:
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class PostgresTx:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        return _rows_changed(await self._conn.execute(numbered(sql), *storable(params)))

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        await self._conn.executemany(numbered(sql), [storable(row) for row in rows])

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return await self._conn.fetchrow(numbered(sql), *storable(params))

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await self._conn.fetch(numbered(sql), *storable(params)))

    async def serialize(self, name: str) -> None:
        await self._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", name)


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, queries: asyncpg.Pool, locks: SessionLocks) -> None:
        self._queries = queries
        self._locks = locks

    @classmethod
    async def open(cls, url: str) -> PostgresDatabase:
        queries = await asyncpg.create_pool(url, min_size=1, max_size=QUERY_POOL_SIZE)
        db = cls(queries, SessionLocks(lambda: asyncpg.connect(url)))
        await db._migrate()
        return db

    async def close(self) -> None:
        await self._locks.close()
        await self._queries.close()

    async def _migrate(self) -> None:
        """Every pending step in one transaction; processes starting together migrate one at a time."""
        async with self.transaction() as tx:
            await tx.serialize(SETUP_LOCK)
            await tx.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            current = await self._version(tx)
            for version, step in enumerate(MIGRATIONS, start=1):
                if version > current:
                    await tx.execute(migration_sql(step, self.dialect))
                    await tx.execute(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (version, time.time())
                    )

    @staticmethod
    async def _version(reader: PostgresTx) -> int:
        row = await reader.fetch_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        return int(row[0]) if row else 0

    async def schema_version(self) -> int:
        async with self._queries.acquire() as conn:
            return await self._version(PostgresTx(conn))

    @asynccontextmanager
    async def transaction(self, *, urgent: bool = False) -> AsyncIterator[PostgresTx]:  # the pool has room for both
        if (open_tx := joined(self)) is not None:  # inside storage.database.one_transaction
            assert isinstance(open_tx, PostgresTx)
            yield open_tx
            return
        async with self._queries.acquire() as conn, conn.transaction():
            yield PostgresTx(conn)

    def exclusive(self, name: str) -> AbstractAsyncContextManager[None]:
        return self._locks.exclusive(name)

    async def claim(self, name: str) -> bool:
        return await self._locks.claim(name)

    async def held(self, name: str) -> bool:
        return await self._locks.held(name)

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        if (open_tx := joined(self)) is not None:  # sees what the open transaction wrote
            return await open_tx.fetch_one(sql, params)
        async with self._queries.acquire() as conn:
            return await PostgresTx(conn).fetch_one(sql, params)

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        if (open_tx := joined(self)) is not None:
            return await open_tx.fetch_all(sql, params)
        async with self._queries.acquire() as conn:
            return await PostgresTx(conn).fetch_all(sql, params)
