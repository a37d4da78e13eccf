"""Where the bot keeps its state: history, LangGraph checkpoints and timers, in SQLite or PostgreSQL.

SQLite (the default) uses three files in data_dir. With `[storage] url` all three live in one
PostgreSQL database, which several bot processes may share.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from bot.config import Config
from bot.timers import DurableTimers
from storage.database import Database, open_database
from storage.locks import SETUP_LOCK
from storage.postgres import LOCK_CONNECTIONS, QUERY_POOL_SIZE

DATABASE_FILE = "roundtable.sqlite3"
CHECKPOINT_FILE = "checkpoints.sqlite3"
TIMERS_FILE = "timers.sqlite3"
# PostgreSQL connections of one process, all told: its statements (storage.postgres), one session
# for its advisory locks, the checkpoints (approvals and tasks) and the timers' job store. Six
# processes stay within PostgreSQL's default max_connections of 100, with room for an operator.
CHECKPOINT_POOL_SIZE = 3
TIMER_POOL_SIZE = 1  # APScheduler works the job store from the event loop, one call at a time
TIMER_POOL_OVERFLOW = 1
CONNECTIONS_PER_PROCESS = (
    QUERY_POOL_SIZE + LOCK_CONNECTIONS + CHECKPOINT_POOL_SIZE + TIMER_POOL_SIZE + TIMER_POOL_OVERFLOW
)


@dataclass
class Persistence:
    db: Database
    checkpointer: BaseCheckpointSaver
    timers: DurableTimers


@asynccontextmanager
async def open_persistence(config: Config) -> AsyncIterator[Persistence]:
    url = config.settings.storage.url
    opener = _postgres(url) if url else _sqlite(config)
    async with opener as persistence:
        yield persistence


@asynccontextmanager
async def _sqlite(config: Config) -> AsyncIterator[Persistence]:
    config.data_dir.mkdir(parents=True, exist_ok=True)
    db = await open_database(config.data_dir / DATABASE_FILE)
    try:
        async with AsyncSqliteSaver.from_conn_string(str(config.data_dir / CHECKPOINT_FILE)) as checkpointer:
            yield Persistence(db, checkpointer, DurableTimers(f"sqlite:///{config.data_dir / TIMERS_FILE}", db))
    finally:
        await db.close()


@asynccontextmanager
async def _postgres(url: str) -> AsyncIterator[Persistence]:
    db = await open_database(url)
    try:
        # The saver's own connection settings, as langgraph-checkpoint-postgres documents them.
        connection = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        async with AsyncConnectionPool(
            url, kwargs=connection, min_size=1, max_size=CHECKPOINT_POOL_SIZE, open=False
        ) as pool:
            checkpointer = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            timer_pool = {"pool_size": TIMER_POOL_SIZE, "max_overflow": TIMER_POOL_OVERFLOW}
            timers = DurableTimers(_sqlalchemy_url(url), db, shared=True, engine_options=timer_pool)
            async with db.exclusive(SETUP_LOCK):  # processes starting together create tables one at a time
                await checkpointer.setup()
            yield Persistence(db, checkpointer, timers)
    finally:
        await db.close()


def _sqlalchemy_url(url: str) -> str:
    """The same database for SQLAlchemy, through psycopg 3 (already there for the checkpointer)."""
    return "postgresql+psycopg://" + url.split("://", 1)[1]
