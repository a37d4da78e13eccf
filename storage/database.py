"""What the query modules need from a database, whichever engine is behind it.

SQL is written once, with `?` placeholders, in the subset SQLite and PostgreSQL share
(`ON CONFLICT … DO NOTHING`, `RETURNING`). Each backend adapts placeholders and owns its
connections, transactions and locks.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# aiosqlite.Row and asyncpg.Record both index by column name and position.
Row = Any
Params = Sequence[Any]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(params: Params) -> tuple[Any, ...]:
    """The parameters with every lone UTF-16 surrogate in their text replaced by U+FFFD.

    JSON's `\\ud800` escape puts one in a Python str, and neither SQLite nor PostgreSQL can encode
    it, so a message (or a name, a feedback form, a command's argument) holding one would fail its
    INSERT. Both backends pass every statement's parameters through here: what any platform sends is
    stored, with the replacement character where the surrogate was."""
    return tuple(
        _LONE_SURROGATE.sub("\ufffd", value) if isinstance(value, str) and not value.isascii() else value
        for value in params
    )


class Tx(Protocol):
    """Statements inside one write transaction."""

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    async def execute_many(self, sql: str, rows: Iterable[Params]) -> None: ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def serialize(self, name: str) -> None:
        """Hold `name` until this transaction ends, so transactions naming it commit one at a time."""
        ...


class Database(Protocol):
    dialect: str  # "sqlite" or "postgresql"

    def transaction(self, *, urgent: bool = False) -> AbstractAsyncContextManager[Tx]:
        """A write transaction. `urgent` ones (storing a message a platform waits to have
        acknowledged) go before routine ones waiting for the same writer."""
        ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    def exclusive(self, name: str) -> AbstractAsyncContextManager[None]:
        """Hold `name` while the block runs; another process asking for it waits (a channel's round, setup)."""
        ...

    async def claim(self, name: str) -> bool:
        """Try to take `name` for as long as this database stays open: True if this process now holds it."""
        ...

    async def held(self, name: str) -> bool:
        """Whether a live process holds `name` (taken with `claim`); a probe that takes nothing."""
        ...

    async def schema_version(self) -> int: ...

    async def close(self) -> None: ...


# -- one transaction for a whole step -------------------------------------------------------------
# A round's turn commits its line, its outbox entries and the round's progress together, though
# they are written by different modules: inside `one_transaction`, every `transaction()` of the
# same task on the same database joins the open one, and reads go through it (they see its writes).


@dataclass
class Ambient:
    db: object
    tx: Tx
    task: asyncio.Task[Any] | None
    after_commit: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)


_AMBIENT: ContextVar[Ambient | None] = ContextVar("roundtable_ambient_transaction", default=None)


def joined(db: object) -> Tx | None:
    """The open `one_transaction` of this task on `db`, if any."""
    ambient = _AMBIENT.get()
    if ambient is None or ambient.db is not db or ambient.task is not asyncio.current_task():
        return None  # a task started inside the block copies the context, but never joins it
    return ambient.tx


@asynccontextmanager
async def one_transaction(db: Database) -> AsyncIterator[Tx]:
    """Everything written inside the block commits together, or not at all."""
    if (tx := joined(db)) is not None:
        yield tx
        return
    async with db.transaction() as tx:
        ambient = Ambient(db, tx, asyncio.current_task())
        token = _AMBIENT.set(ambient)
        try:
            yield tx
        finally:
            _AMBIENT.reset(token)
    for callback in ambient.after_commit:
        if (pending := callback()) is not None:
            await pending


def after_commit(db: object, callback: Callable[[], None]) -> None:
    """Call `callback` once what was written so far is committed: now, or when the open block commits."""
    ambient = _AMBIENT.get()
    if ambient is not None and joined(db) is not None:
        ambient.after_commit.append(callback)
    else:
        callback()


async def when_committed(db: object, work: Callable[[], Awaitable[None]]) -> None:
    """Run `work` once what was written so far is committed: now, or right after the open block commits
    (in order with the block's other callbacks). What only shows the written state, and cannot be
    queued, such as a console print, never shows what a crash then rolls back."""
    ambient = _AMBIENT.get()
    if ambient is not None and joined(db) is not None:
        ambient.after_commit.append(work)
    else:
        await work()


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


async def open_database(url_or_path: str | Path) -> Database:
    """A migrated database: PostgreSQL for a postgresql:// URL, otherwise an SQLite file at that path."""
    if isinstance(url_or_path, str) and is_postgres_url(url_or_path):
        from storage.postgres import PostgresDatabase

        return await PostgresDatabase.open(url_or_path)
    from storage.sqlite import SqliteDatabase

    return await SqliteDatabase.open(url_or_path)
