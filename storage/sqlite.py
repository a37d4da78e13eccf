"""The SQLite backend in WAL mode: one writer connection, writes serialized in-process, and a
reader connection, so no read ever sees another transaction's uncommitted rows.

Statements run on the event loop's own thread. In WAL mode with `synchronous = NORMAL` a commit
only appends to the WAL file (no fsync), so a statement takes microseconds; a trip to a worker
thread per statement (aiosqlite) cost far more than the statement, and under load every trip also
waited its turn on the busy loop. A transaction now runs without yielding to the loop unless its
caller awaits something else inside it.

SQLite's automatic checkpoint runs inside whichever COMMIT crosses its threshold and syncs the
files, which stalled the loop for 10-50 ms a few times per busy second; so the writer does not
checkpoint, and a connection of its own does it in a worker thread every CHECKPOINT_EVERY commits."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from storage.database import Params, Row, joined, storable
from storage.dialects import migration_sql
from storage.migrations import MIGRATIONS

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 200  # commits; SQLite's own default is 1,000 WAL pages, a few hundred of our commits


class SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, storable(params)).rowcount

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        self._conn.executemany(sql, [storable(row) for row in rows])

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return self._conn.execute(sql, storable(params)).fetchone()

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        return self._conn.execute(sql, storable(params)).fetchall()

    async def serialize(self, name: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE already lets one writer in at a time."""


class SqliteDatabase:
    """Wraps a writer and a reader sqlite3 connection.

    All writes go through `transaction()` on the writer, which holds a lock: coroutines sharing
    one connection would otherwise interleave their statements inside each other's transactions.
    Reads outside a transaction go to the writer while no transaction is open on it (its page cache
    stays warm), else to the reader, which in WAL mode sees only committed rows.
    One process owns the file, so its locks are always free: its own per-channel queue already
    keeps a channel's rounds apart.
    """

    dialect = "sqlite"

    def __init__(
        self,
        writer: sqlite3.Connection,
        reader: sqlite3.Connection | None,
        checkpointer: sqlite3.Connection | None = None,
    ) -> None:
        self._conn = writer
        self._reader = reader
        self._checkpointer = checkpointer
        self._commits = 0  # since the last checkpoint
        self._checkpointing: asyncio.Task[None] | None = None
        self._writes = SqliteTx(writer)
        self._reads = SqliteTx(reader or writer)
        self._write_lock = asyncio.Lock()
        self._urgent_waiting = 0
        self._no_urgent_waiting = asyncio.Event()
        self._no_urgent_waiting.set()

    @classmethod
    async def open(cls, path: Path | str) -> SqliteDatabase:
        in_memory = str(path) == ":memory:"
        if not in_memory:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        writer = _connect(path)
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA synchronous = NORMAL")
        writer.execute("PRAGMA foreign_keys = ON")
        if in_memory:  # private to its connection: there, reads wait for the write lock
            db = cls(writer, None)
        else:
            writer.execute("PRAGMA wal_autocheckpoint = 0")
            db = cls(writer, _connect(path, query_only=True), _connect(path))
        await db._migrate()
        return db

    async def close(self) -> None:
        if self._checkpointing is not None:
            await self._checkpointing
        if self._reader is not None:
            self._reader.close()
        self._conn.close()
        if self._checkpointer is not None:
            self._checkpointer.close()  # the last connection out checkpoints what is left

    def _committed(self) -> None:
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and self._checkpointer is not None and self._checkpointing is None:
            self._commits = 0
            self._checkpointing = asyncio.create_task(self._checkpoint(self._checkpointer))

    async def _checkpoint(self, connection: sqlite3.Connection) -> None:
        """PASSIVE: copies what it can without waiting for, or blocking, the writer and readers."""
        try:
            await asyncio.to_thread(connection.execute, "PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # the next one tries again; the WAL only grows meanwhile
            log.warning("WAL checkpoint failed: %s", exc)
        finally:
            self._checkpointing = None

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
                self._conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;")

    @asynccontextmanager
    async def transaction(self, *, urgent: bool = False) -> AsyncIterator[SqliteTx]:
        if (open_tx := joined(self)) is not None:  # inside storage.database.one_transaction
            assert isinstance(open_tx, SqliteTx)
            yield open_tx
            return
        async with self._writer_turn(urgent):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqliteTx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
                self._committed()

    @asynccontextmanager
    async def _writer_turn(self, urgent: bool) -> AsyncIterator[None]:
        """The writer, one transaction at a time. While an urgent one waits, routine ones let it in
        first: under load a message waiting to be acknowledged must not queue behind every round."""
        if urgent:
            self._urgent_waiting += 1
            self._no_urgent_waiting.clear()
            try:
                await self._write_lock.acquire()
            finally:
                self._urgent_waiting -= 1
                if not self._urgent_waiting:
                    self._no_urgent_waiting.set()
        else:
            while True:
                await self._no_urgent_waiting.wait()
                await self._write_lock.acquire()
                if not self._urgent_waiting:
                    break
                self._write_lock.release()
        try:
            yield
        finally:
            self._write_lock.release()

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        yield

    async def claim(self, name: str) -> bool:
        return True

    async def held(self, name: str) -> bool:
        return False  # one process owns the file: nobody else holds anything

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]:
        if (open_tx := joined(self)) is not None:  # sees what the open transaction wrote
            return await open_tx.fetch_all(sql, params)
        if not self._write_lock.locked():
            # No transaction is open on the writer, so it reads what is committed, as the reader
            # would, from a warm page cache: each commit empties the reader's.
            return await self._writes.fetch_all(sql, params)
        if self._reader is None:
            async with self._write_lock:
                return await self._writes.fetch_all(sql, params)
        return await self._reads.fetch_all(sql, params)

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None


def _connect(path: Path | str, *, query_only: bool = False) -> sqlite3.Connection:
    connection = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    connection.row_factory = sqlite3.Row
    connection.execute("PRAGMA busy_timeout = 5000")
    if query_only:
        connection.execute("PRAGMA query_only = ON")
    return connection
