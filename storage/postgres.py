"""The PostgreSQL backend, through asyncpg: pooled connections, advisory locks, the same migrations.

Several bot processes may share one database. Advisory locks make that safe beyond plain
transactions: `Tx.serialize` takes one for a transaction, `exclusive` holds one on a connection of
its own for as long as a block runs (a channel's round), and `claim` keeps one until close.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from functools import lru_cache

import asyncpg

from storage.database import Params, Row, joined, storable
from storage.dialects import migration_sql
from storage.locks import SETUP_LOCK
from storage.migrations import MIGRATIONS

QUERY_POOL_SIZE = 10
# Each running round holds one of these connections, so this caps the channels one process
# runs at a time; rounds beyond it wait their turn. Kept apart from the query pool so that
# rounds holding locks can never starve the queries they need to finish.
CHANNEL_LOCK_POOL_SIZE = 20


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

    def __init__(self, queries: asyncpg.Pool, locks: asyncpg.Pool) -> None:
        self._queries = queries
        self._locks = locks
        self._claims: list[asyncpg.Connection] = []

    @classmethod
    async def open(cls, url: str) -> PostgresDatabase:
        queries = await asyncpg.create_pool(url, min_size=1, max_size=QUERY_POOL_SIZE)
        locks = await asyncpg.create_pool(url, min_size=0, max_size=CHANNEL_LOCK_POOL_SIZE)
        db = cls(queries, locks)
        await db._migrate()
        return db

    async def close(self) -> None:
        for conn in self._claims:
            await self._locks.release(conn)
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

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        async with self._locks.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", name)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)

    async def claim(self, name: str) -> bool:
        conn = await self._locks.acquire()
        if await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", name):
            self._claims.append(conn)  # the session holds the lock until this connection closes
            return True
        await self._locks.release(conn)
        return False

    async def held(self, name: str) -> bool:
        async with self._locks.acquire() as conn:
            if await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", name):
                await conn.fetchval("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)
                return False
            return True

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
