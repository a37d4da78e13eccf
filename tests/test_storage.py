"""Storage on both backends: migrations, per-persona delivery, dedupe, windowed history, the inbox, locks."""

import asyncio
import sqlite3
import time

import pytest

from storage import approvals, channels, history, inbox, memory, rounds
from storage.database import Database, one_transaction, open_database
from storage.dialects import migration_sql
from storage.locks import channel_lock
from storage.migrations import MIGRATIONS
from storage.records import LineKind, RequestPlace
from tests.conftest import Opener

KEY = "console:t"


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


@pytest.fixture
async def db(open_db: Opener) -> Database:
    db = await open_db()
    await channels.ensure_channel(db, KEY, participants=["nova", "sage"], moderated=False)
    return db


async def count(db: Database, table: str) -> int:
    row = await db.fetch_one(f"SELECT COUNT(*) FROM {table}")
    return int(row[0])


async def test_migrations_are_versioned_and_run_once(db, open_db):
    assert await db.schema_version() == len(MIGRATIONS)
    reopened = await open_db()  # migrating twice is a no-op
    assert await reopened.schema_version() == len(MIGRATIONS)
    assert await channels.participants(reopened, KEY) == ["nova", "sage"]


async def test_a_line_is_stored_once_and_delivered_to_the_participants_present(db):
    await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", "before rex")
    await history.set_membership(db, KEY, "rex", active=True, marker_text="Rex joined")
    await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", "with rex")
    await history.set_membership(db, KEY, "sage", active=False, marker_text="Sage left")
    await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", "after sage left")

    def texts(lines):
        return [line.text for line in reversed(lines)]

    nova = await history.recent_lines_for(db, KEY, "nova", limit=50)
    rex = await history.recent_lines_for(db, KEY, "rex", limit=50)
    sage = await history.recent_lines_for(db, KEY, "sage", limit=50)
    assert texts(nova) == ["before rex", "Rex joined", "with rex", "Sage left", "after sage left"]
    assert texts(rex) == ["Rex joined", "with rex", "Sage left", "after sage left"]
    assert texts(sage) == ["before rex", "Rex joined", "with rex"]  # keeps its memory, hears nothing new
    assert await count(db, "lines") == 5
    assert await channels.participants(db, KEY) == ["nova", "rex"]


async def test_text_with_lone_surrogates_is_stored_with_replacement_characters(db):
    line = await inbox.accept(db, "Ev\udc00", KEY, "u1", "Ana \udfff", "a \ud800 b \U0001f600")
    assert line is not None and line.text == "a \ufffd b \U0001f600"
    [stored] = await history.lines_by_id(db, [line.id])
    assert (stored.author_name, stored.text) == ("Ana \ufffd", "a \ufffd b \U0001f600")
    assert await inbox.accept(db, "Ev\udc00", KEY, "u1", "Ana", "again") is None  # same event, once


async def test_inviting_twice_or_dismissing_an_absent_persona_changes_nothing(db):
    assert not await history.set_membership(db, KEY, "nova", active=True, marker_text="Nova joined")
    assert not await history.set_membership(db, KEY, "rex", active=False, marker_text="Rex left")
    assert await history.recent_lines_for(db, KEY, "nova", limit=10) == []


async def test_a_repeated_event_id_is_recorded_once(db):
    first = await inbox.accept(db, "evt-1", KEY, "u1", "Ana", "hello")
    again = await inbox.accept(db, "evt-1", KEY, "u1", "Ana", "hello")
    assert first is not None and again is None
    assert await count(db, "lines") == 1
    assert await history.forget_processed_events(db, older_than_seconds=-1) == 1


async def test_two_processes_given_the_same_events_record_each_once(db, open_db):
    other = await open_db()
    events = [(f"evt-{i}", f"message {i}") for i in range(50)]

    async def feed(handle: Database) -> list[str]:
        recorded = []
        for event_id, text in events:
            if await inbox.accept(handle, event_id, KEY, "u1", "Ana", text) is not None:
                recorded.append(event_id)
        return recorded

    mine, theirs = await asyncio.gather(feed(db), feed(other))
    assert sorted(mine + theirs) == sorted(event_id for event_id, _ in events)
    waiting = []
    while (message := await inbox.oldest(db, KEY)) is not None:
        waiting.append(message.text)
        await rounds.begin(db, message)  # its round starts: the line leaves the inbox
    assert waiting == [text for _, text in events]  # the inbox hands them out in the order they arrived


async def test_a_waiting_message_is_heard_only_when_its_round_comes(db):
    await inbox.accept(db, None, KEY, "u1", "Ana", "Sage?", mentions=("sage",), thread="t-1")
    assert await inbox.channels_waiting(db) == [KEY]
    assert await history.recent_lines_for(db, KEY, "sage", limit=5) == []
    assert await history.recent_channel_lines(db, KEY, limit=5) == []
    message = await inbox.oldest(db, KEY)
    assert (message.text, message.author_name, message.mentions, message.thread) == ("Sage?", "Ana", ("sage",), "t-1")
    await rounds.begin(db, message)
    assert await inbox.channels_waiting(db) == []
    assert [line.text for line in await history.recent_lines_for(db, KEY, "sage", limit=5)] == ["Sage?"]


async def test_messages_answered_in_one_round_leave_the_inbox_together_or_not_at_all(db):
    """After /moderate resume one round answers every waiting message: a stop while it starts
    leaves them all waiting, never some out of both the inbox and the round."""
    for text in ("one", "two", "three"):
        await inbox.accept(db, None, KEY, "u1", "Ana", text)
    first = await inbox.oldest(db, KEY)
    second = await inbox.oldest_after(db, KEY, first.line_id)
    newest = await inbox.oldest_after(db, KEY, second.line_id)
    with pytest.raises(RuntimeError):
        async with one_transaction(db):
            await rounds.begin(db, newest, [first.line_id, second.line_id])
            raise RuntimeError("stopped while the round began")
    assert await inbox.oldest(db, KEY) == first
    assert await rounds.running(db, KEY) is None
    await rounds.begin(db, newest, [first.line_id, second.line_id])
    assert await inbox.oldest(db, KEY) is None
    assert (await rounds.running(db, KEY))[0] == newest


async def test_window_reads_return_the_newest_lines_of_a_large_history(db):
    async with db.transaction() as tx:
        now = time.time()
        await tx.execute_many(
            "INSERT INTO lines (channel_key, kind, author_id, author_name, text, created_at) VALUES (?, 'human', 'u', 'Ana', ?, ?)",
            [(KEY, f"line {i}", now) for i in range(20_000)],
        )
        await tx.execute(
            "INSERT INTO deliveries (channel_key, persona_id, line_id) SELECT channel_key, 'nova', id FROM lines"
        )
    lines = await history.recent_lines_for(db, KEY, "nova", limit=20)
    assert [line.text for line in lines[:2]] == ["line 19999", "line 19998"]
    older = await history.recent_lines_for(db, KEY, "nova", limit=20, before_id=lines[-1].id)
    assert older[0].text == "line 19979"


async def test_the_newest_session_end_a_persona_witnessed_is_found_among_markers(db):
    """What the memory keeper folds up to when a conversation went quiet: the newest "Session
    ended" marker after the summary's last line, and only one delivered to that persona."""
    ended = await history.append_line(db, KEY, LineKind.MARKER, "system", "system", f"{inbox.SESSION_ENDED} (Monday)")
    await history.append_line(db, KEY, LineKind.MARKER, "system", "system", "New session (Tuesday)")
    await history.append_line(db, KEY, LineKind.HUMAN, "u", "Ana", f"{inbox.SESSION_ENDED} is what I said")
    await history.set_membership(db, KEY, "nova", active=False, marker_text="Nova left")
    unseen = await history.append_line(db, KEY, LineKind.MARKER, "system", "system", f"{inbox.SESSION_ENDED} (Wed)")

    assert await memory.newest_marker(db, KEY, "nova", inbox.SESSION_ENDED, after_id=0) == ended.id
    assert await memory.newest_marker(db, KEY, "sage", inbox.SESSION_ENDED, after_id=0) == unseen.id
    assert await memory.newest_marker(db, KEY, "nova", inbox.SESSION_ENDED, after_id=ended.id) is None
    assert await memory.newest_marker(db, KEY, "sage", "Session", after_id=unseen.id) is None


async def test_the_audit_log_refuses_changes(db):
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO audit_log (at, channel_key, persona_id, action, event) VALUES (?, ?, 'nova', 'x', 'refused')",
            (time.time(), KEY),
        )
    for statement in ("UPDATE audit_log SET actor = 'me'", "DELETE FROM audit_log"):
        with pytest.raises(Exception, match="append-only"):
            async with db.transaction() as tx:
                await tx.execute(statement)
    assert await count(db, "audit_log") == 1


async def test_postgres_channel_lock_makes_a_second_process_wait(postgres_server):
    url = await postgres_server.new_database()
    first, second = await open_database(url), await open_database(url)
    order: list[str] = []
    first_in = asyncio.Event()

    async def hold(handle: Database, name: str) -> None:
        async with handle.exclusive(channel_lock(KEY)):
            order.append(f"{name} in")
            first_in.set()
            await asyncio.sleep(0.2)
            order.append(f"{name} out")

    holding = asyncio.create_task(hold(first, "first"))
    await first_in.wait()
    await hold(second, "second")
    await holding
    assert order == ["first in", "first out", "second in", "second out"]
    await first.close()
    await second.close()


async def test_postgres_claim_is_held_by_one_process_until_it_closes(postgres_server):
    url = await postgres_server.new_database()
    first, second = await open_database(url), await open_database(url)
    assert await first.claim("timers")
    assert not await second.claim("timers")
    await first.close()
    assert await second.claim("timers")
    await second.close()


async def test_postgres_locks_of_one_process_share_one_connection_and_still_exclude(postgres_server):
    """Two blocks of one process on one channel run one at a time, though the session's advisory
    locks are re-entrant; many channels held at once take one connection; a claim is held by its
    own process (and seen so by it); and a process whose lock connection is lost holds nothing."""
    url = await postgres_server.new_database()
    first, second = await open_database(url), await open_database(url)
    order: list[str] = []
    b_asks = asyncio.Event()

    async def hold(name: str, key: str = KEY) -> None:
        if name == "b":
            b_asks.set()
        async with first.exclusive(channel_lock(key)):
            order.append(f"{name} in")
            if name == "a":
                await b_asks.wait()
                # Statements on the process's one lock connection, queued behind b's try of the lock:
                # were b let through to PostgreSQL, whose session locks are re-entrant, it would be in now.
                for _ in range(2):
                    await first.held("console:probe")
            order.append(f"{name} out")

    await asyncio.gather(hold("a"), hold("b"))
    assert order == ["a in", "a out", "b in", "b out"]

    def lock_sessions() -> str:
        return "SELECT COUNT(DISTINCT pid) FROM pg_locks WHERE locktype = 'advisory'"

    entered, release = asyncio.Event(), asyncio.Event()
    inside = 0

    async def hold_until_released(key: str) -> None:
        nonlocal inside
        async with first.exclusive(channel_lock(key)):
            inside += 1
            if inside == 30:
                entered.set()
            await release.wait()

    holders = [asyncio.create_task(hold_until_released(f"console:many{n}")) for n in range(30)]
    await entered.wait()
    assert (await second.fetch_one(lock_sessions()))[0] == 1
    release.set()
    await asyncio.gather(*holders)

    assert await first.claim("outbox-sender:first")
    assert await first.claim("outbox-sender:first")  # still its own
    assert await first.held("outbox-sender:first")
    assert await second.held("outbox-sender:first")
    assert not await second.claim("outbox-sender:first")

    behind = second.exclusive(channel_lock(KEY))
    async with first.exclusive(channel_lock(KEY)):
        waiting = asyncio.create_task(behind.__aenter__())
        await second.fetch_one("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'")
        await waiting  # the lost connection's locks went with it
    await behind.__aexit__(None, None, None)
    assert await first.claim("outbox-sender:first")  # a new connection takes the process's claims again
    assert await second.held("outbox-sender:first")
    await first.close()
    assert not await second.held("outbox-sender:first")
    assert await second.claim("outbox-sender:first")
    await second.close()


async def test_sqlite_uses_wal_and_reads_history_through_the_index(tmp_path):
    db = await open_database(tmp_path / "db.sqlite3")
    assert (await db.fetch_one("PRAGMA journal_mode"))[0] == "wal"
    plan = await db.fetch_all(
        "EXPLAIN QUERY PLAN SELECT l.* FROM deliveries d JOIN lines l ON l.id = d.line_id "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id < ? "
        "AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = d.line_id) ORDER BY d.line_id DESC LIMIT ?",
        (KEY, "nova", 10**9, 50),
    )
    details = " ".join(row["detail"] for row in plan)
    assert "SEARCH d USING PRIMARY KEY" in details and "SCAN" not in details
    assert "SEARCH i USING INTEGER PRIMARY KEY" in details  # the inbox check is one key lookup
    assert "TEMP B-TREE" not in details  # no sort: the index is already in line order
    await db.close()


async def test_no_read_sees_a_transactions_uncommitted_lines(db):
    await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", "committed")
    inside, release = asyncio.Event(), asyncio.Event()

    async def slow_writer() -> None:
        async with db.transaction() as tx:
            await history.insert_line(tx, KEY, LineKind.HUMAN, "u1", "Ana", "not yet committed")
            inside.set()
            await release.wait()
            raise RuntimeError("rolled back")

    writer = asyncio.create_task(slow_writer())
    await inside.wait()
    seen = [line.text for line in await history.recent_lines_for(db, KEY, "nova", limit=10)]
    channel = [line.text for line in await history.recent_channel_lines(db, KEY, limit=10)]
    release.set()
    with pytest.raises(RuntimeError):
        await writer
    assert seen == ["committed"] and channel == ["committed"]
    assert [line.text for line in await history.recent_lines_for(db, KEY, "nova", limit=10)] == ["committed"]


async def test_request_places_of_both_platforms_are_carried_into_one_table(tmp_path) -> None:
    """Migration 15: approval_places (Slack's raw channel ids, Discord's "discord:<id>") and
    approval_deciders become request_places, one row per request with its platform and decider."""
    path = tmp_path / "db.sqlite3"
    with sqlite3.connect(path) as conn:
        for step in MIGRATIONS[:14]:
            conn.executescript(migration_sql(step, "sqlite"))
        conn.execute("INSERT INTO channels (key, created_at) VALUES ('slack:T1:C1', 0), ('discord:5', 0)")
        for approval_id, key in ((1, "slack:T1:C1"), (2, "discord:5")):
            conn.execute(
                "INSERT INTO approvals (id, batch, call_id, channel_key, persona_id, action, args, requested_at, "
                "expires_at) VALUES (?, 'b', ?, ?, 'nova', 'publish_post', '{}', 0, 1)",
                (approval_id, f"c{approval_id}", key),
            )
        conn.execute("INSERT INTO approval_places VALUES (1, 'C1', '9.9'), (2, 'discord:5', '77')")
        conn.execute("INSERT INTO approval_deciders VALUES (2, '42')")
        conn.execute("PRAGMA user_version = 14")
    db = await open_database(path)
    try:
        assert await approvals.place_of(db, 1) == RequestPlace("slack", "C1", "9.9")
        assert await approvals.place_of(db, 2) == RequestPlace("discord", "5", "77", decider="42")
    finally:
        await db.close()
