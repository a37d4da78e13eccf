"""Storage: migrations, per-persona delivery, dedupe, windowed history."""

import time

from storage import channels, history
from storage.database import Database
from storage.migrations import MIGRATIONS
from storage.records import LineKind

KEY = "console:t"


async def open_db(tmp_path) -> Database:
    db = await Database.open(tmp_path / "db.sqlite3")
    await channels.ensure_channel(db, KEY, participants=["nova", "sage"], moderated=False)
    return db


async def test_migrations_are_versioned_and_the_database_uses_wal(tmp_path):
    db = await open_db(tmp_path)
    assert await db.schema_version() == len(MIGRATIONS)
    assert (await db.fetch_one("PRAGMA journal_mode"))[0] == "wal"
    await db.close()
    reopened = await Database.open(tmp_path / "db.sqlite3")  # migrating twice is a no-op
    assert await reopened.schema_version() == len(MIGRATIONS)
    await reopened.close()


async def test_a_line_is_stored_once_and_delivered_to_the_participants_present(tmp_path):
    db = await open_db(tmp_path)
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
    assert (await db.fetch_one("SELECT COUNT(*) FROM lines"))[0] == 5
    assert await channels.participants(db, KEY) == ["nova", "rex"]
    await db.close()


async def test_inviting_twice_or_dismissing_an_absent_persona_changes_nothing(tmp_path):
    db = await open_db(tmp_path)
    assert not await history.set_membership(db, KEY, "nova", active=True, marker_text="Nova joined")
    assert not await history.set_membership(db, KEY, "rex", active=False, marker_text="Rex left")
    assert await history.recent_lines_for(db, KEY, "nova", limit=10) == []
    await db.close()


async def test_a_repeated_event_id_is_recorded_once(tmp_path):
    db = await open_db(tmp_path)
    first = await history.append_inbound(db, "evt-1", KEY, "u1", "Ana", "hello")
    again = await history.append_inbound(db, "evt-1", KEY, "u1", "Ana", "hello")
    assert first is not None and again is None
    assert (await db.fetch_one("SELECT COUNT(*) FROM lines"))[0] == 1
    assert await history.forget_processed_events(db, older_than_seconds=-1) == 1
    await db.close()


async def test_reading_recent_history_is_an_index_range_scan(tmp_path):
    db = await open_db(tmp_path)
    plan = await db.fetch_all(
        "EXPLAIN QUERY PLAN SELECT l.* FROM deliveries d JOIN lines l ON l.id = d.line_id "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id < ? ORDER BY d.line_id DESC LIMIT ?",
        (KEY, "nova", 10**9, 50),
    )
    details = " ".join(row["detail"] for row in plan)
    assert "SEARCH d USING PRIMARY KEY" in details and "SCAN" not in details
    assert "TEMP B-TREE" not in details  # no sort: the index is already in line order
    await db.close()


async def test_window_reads_cost_the_same_with_a_large_history(tmp_path):
    db = await open_db(tmp_path)
    async with db.transaction() as conn:
        now = time.time()
        await conn.executemany(
            "INSERT INTO lines (channel_key, kind, author_id, author_name, text, created_at) VALUES (?, 'human', 'u', 'Ana', ?, ?)",
            [(KEY, f"line {i}", now) for i in range(20_000)],
        )
        await conn.execute(
            "INSERT INTO deliveries (channel_key, persona_id, line_id) SELECT channel_key, 'nova', id FROM lines"
        )
    lines = await history.recent_lines_for(db, KEY, "nova", limit=20)
    assert [line.text for line in lines[:2]] == ["line 19999", "line 19998"]
    older = await history.recent_lines_for(db, KEY, "nova", limit=20, before_id=lines[-1].id)
    assert older[0].text == "line 19979"
    await db.close()
