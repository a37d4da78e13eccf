"""The SQLite backend: one aiosqlite connection in WAL mode, writes serialized in-process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from storage.database import Params, Row
from storage.migrations import MIGRATIONS, migration_sql


class SqliteTx:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        cursor = await self._conn.execute(sql, tuple(params))
        return cursor.rowcount

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        await self._conn.executemany(sql, [tuple(row) for row in rows])

    # execute_fetchall is one trip to aiosqlite's thread; execute, fetch and close would be three.
    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self._conn.execute_fetchall(sql, tuple(params))
        return next(iter(rows), None)

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await self._conn.execute_fetchall(sql, tuple(params)))

    async def serialize(self, name: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE already lets one writer in at a time."""


class SqliteDatabase:
    """Wraps one aiosqlite connection.

    All writes go through `transaction()`, which holds a lock: coroutines sharing one
    connection would otherwise interleave their statements inside each other's transactions.
    One process owns the file, so its locks are always free: its own per-channel queue already
    keeps a channel's rounds apart.
    """

    dialect = "sqlite"

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._conn = connection
        self._reads = SqliteTx(connection)
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str) -> SqliteDatabase:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(str(path), isolation_level=None)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        await conn.execute("PRAGMA busy_timeout = 5000")
        db = cls(conn)
        await db._migrate()
        return db

    async def close(self) -> None:
        await self._conn.close()

    async def schema_version(self) -> int:
        row = await self.fetch_one("PRAGMA user_version")
        return int(row[0]) if row else 0

    async def _migrate(self) -> None:
        current = await self.schema_version()
        for version, step in enumerate(MIGRATIONS, start=1):
            if version <= current:
                continue
            script = migration_sql(step, self.dialect)
            async with self._write_lock:
                # executescript commits on its own, so the version bump rides inside the script.
                await self._conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        async with self._write_lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqliteTx(self._conn)
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            else:
                await self._conn.execute("COMMIT")

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        yield

    async def claim(self, name: str) -> bool:
        return True

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._reads.fetch_all(sql, params)

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return await self._reads.fetch_one(sql, params)
