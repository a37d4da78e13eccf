"""Three bot processes (three apps on one PostgreSQL database, each with its own pools, locks and
checkpointer) running many channels at once stay within a small number of connections each, and
one process runs as many rounds at once as `[storage] max_rounds_at_once` allows: more than its
connections, and no more than that.

Each persona's model call waits until every process has its most rounds in the model at once, so
the rounds are all running when the connections are counted."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import asyncpg
from langchain_core.messages import BaseMessage

from bot.app import App
from bot.inbound import Inbound
from bot.persistence import CONNECTIONS_PER_PROCESS
from tests.fake_models import FakeModels, fresh_reply
from tests.postgres_server import PostgresServer
from tests.recording_port import RecordingPort

PROCESSES = 3
ROUNDS_AT_ONCE = 25  # each process's [storage] max_rounds_at_once
CHANNELS = 30  # per process: 5 wait for a free place


CONNECTED = re.compile(r"\[(\d+)\] LOG:  connection authorized: user=\S+ database=(\S+)")
DISCONNECTED = re.compile(r"\[(\d+)\] LOG:  disconnection: session time: \S+ user=\S+ database=(\S+)")


def most_at_once(server_log: str, database: str) -> int:
    """The most client connections to `database` open at once, by PostgreSQL's own log of each
    connection and disconnection: every rise is a line of its own, so no peak goes unseen."""
    open_now: set[str] = set()
    most = 0
    for line in server_log.splitlines():
        if (connected := CONNECTED.search(line)) and connected[2] == database:
            open_now.add(connected[1])
            most = max(most, len(open_now))
        elif (gone := DISCONNECTED.search(line)) and gone[2] == database:
            open_now.discard(gone[1])
    return most


async def logging_connections(server: PostgresServer) -> None:
    """Wait until the server has read the settings again: a fresh session starts with them on."""
    async with asyncio.timeout(30):
        while True:
            fresh = await asyncpg.connect(server.url())
            try:
                if await fresh.fetchval("SHOW log_disconnections") == "on":
                    return
            finally:
                await fresh.close()
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def counting_connections(server: PostgresServer, url: str) -> AsyncIterator[list[int]]:
    """[the most client connections to the database at once during the block], counted by PostgreSQL:
    every connection to the database logs its start and end (set from the server's maintenance
    database, so this probe is not counted)."""
    database = url.rsplit("/", 1)[1]
    server_log = server.directory / "server.log"
    probe = await asyncpg.connect(server.url())
    settings = ("log_connections", "log_disconnections")
    try:
        for setting in settings:  # for the connections that start from now on
            await probe.execute(f"ALTER SYSTEM SET {setting} = on")
        await probe.execute("SELECT pg_reload_conf()")
        await logging_connections(server)
        peak = [0]
        yield peak
        peak[0] = most_at_once(server_log.read_text(encoding="utf-8", errors="replace"), database)
    finally:
        for setting in settings:
            await probe.execute(f"ALTER SYSTEM RESET {setting}")
        await probe.execute("SELECT pg_reload_conf()")
        await probe.close()


class Gate:
    """Holds every persona call until `expected` of them wait at once; counts each process's peak."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.waiting = 0
        self.in_model = [0] * PROCESSES
        self.peak = [0] * PROCESSES
        self.calls = 0
        self.open = asyncio.Event()

    def reply_for(self, process: int) -> Callable[[str, list[BaseMessage]], Any]:
        async def reply(speaker: str, messages: list[BaseMessage]) -> str:
            self.calls += 1
            number = self.calls
            self.in_model[process] += 1
            self.peak[process] = max(self.peak[process], self.in_model[process])
            self.waiting += 1
            if self.waiting >= self.expected:
                self.open.set()
            try:
                await self.open.wait()
            finally:
                self.in_model[process] -= 1
            return fresh_reply("Let us weigh it carefully before anyone commits", number)

        return reply


async def test_three_processes_run_many_rounds_each_on_few_connections(open_test_app, postgres_server):
    url = await postgres_server.new_database()
    gate = Gate(expected=PROCESSES * ROUNDS_AT_ONCE)
    ports = [RecordingPort() for _ in range(PROCESSES)]
    sections = {
        "storage": {"url": url, "max_rounds_at_once": ROUNDS_AT_ONCE},
        "moderation": {"enabled": False},
    }
    async with counting_connections(postgres_server, url) as peak_connections, AsyncExitStack() as stack:
        apps: list[App] = [
            await stack.enter_async_context(
                open_test_app(sections, models=FakeModels(gate.reply_for(n)), outbound=ports[n])
            )
            for n in range(PROCESSES)
        ]
        for n, app in enumerate(apps):
            for c in range(CHANNELS):
                key = f"console:p{n}c{c}"
                await app.service.handle(Inbound(key, f"u{n}-{c}", f"Ana{c}", "Sage, what do you think we should do?"))
        async with asyncio.timeout(300):  # a failsafe: every process reaches its most rounds at once
            await gate.open.wait()
            await asyncio.gather(*(app.service.wait_idle() for app in apps))

    server = await asyncpg.connect(postgres_server.url())
    max_connections = int(await server.fetchval("SHOW max_connections"))
    await server.close()
    answered = [len([post for post in port.posts if post[1] == "sage"]) for port in ports]
    assert answered == [CHANNELS] * PROCESSES
    # Each process ran exactly as many rounds at once as it was allowed: all of them at once, on
    # fewer connections than rounds.
    assert gate.peak == [ROUNDS_AT_ONCE] * PROCESSES
    assert 0 < peak_connections[0] < PROCESSES * ROUNDS_AT_ONCE
    # Within a few connections each: twice as many processes and an operator fit the server's limit.
    assert peak_connections[0] <= PROCESSES * CONNECTIONS_PER_PROCESS
    assert 2 * peak_connections[0] + 10 <= max_connections
