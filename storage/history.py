"""Channel lines, each stored once and delivered to the personas present when it was said."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from storage.database import Database, Row, Tx
from storage.records import Line, LineKind, ToolCall
from storage.threads import RULES_OF, own_rules_in

_KINDS = {kind.value: kind for kind in LineKind}  # a dict lookup: LineKind(value) costs several times more


def line_of(row: Row) -> Line:
    """A `lines` row as a Line."""
    calls = row["tool_calls"]
    return Line(
        row["id"],
        row["channel_key"],
        _KINDS[row["kind"]],
        row["author_id"],
        row["author_name"],
        row["text"],
        row["created_at"],
        tuple(ToolCall(c["id"], c["name"], c["args"], c.get("signature")) for c in json.loads(calls)) if calls else (),
        row["call_id"],
        row["signature"],
    )


async def insert_line(tx: Tx, channel_key: str, kind: LineKind, author_id: str, author_name: str, text: str) -> Line:
    line = await _insert(tx, Line(0, channel_key, kind, author_id, author_name, text, time.time()))
    await _deliver_to_participants(tx, line)
    return line


async def _deliver_to_participants(tx: Tx, line: Line) -> None:
    await tx.execute(
        "INSERT INTO deliveries (channel_key, persona_id, line_id) "
        f"SELECT ?, persona_id, ? FROM participants WHERE channel_key = {RULES_OF} AND active = 1",
        (line.channel_key, line.id, line.channel_key),
    )


async def _insert(tx: Tx, line: Line) -> Line:
    """Store `line` (its id is ignored); the stored line, with its new id."""
    calls = json.dumps([_call_json(c) for c in line.tool_calls]) if line.tool_calls else None
    row = await tx.fetch_one(
        "INSERT INTO lines (channel_key, kind, author_id, author_name, text, created_at, tool_calls, call_id, "
        "signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id, author_name, text",  # as stored: see storable()
        (
            line.channel_key,
            line.kind.value,
            line.author_id,
            line.author_name,
            line.text,
            line.created_at,
            calls,
            line.call_id,
            line.signature,
        ),
    )
    assert row is not None
    return Line(
        int(row[0]),
        line.channel_key,
        line.kind,
        line.author_id,
        row[1],
        row[2],
        line.created_at,
        line.tool_calls,
        line.call_id,
        line.signature,
    )


def _call_json(call: ToolCall) -> dict[str, Any]:
    stored: dict[str, Any] = {"id": call.id, "name": call.name, "args": call.args}
    if call.signature:
        stored["signature"] = call.signature
    return stored


async def _deliver_privately(tx: Tx, line: Line, persona_id: str) -> Line:
    stored = await _insert(tx, line)
    await tx.execute(
        "INSERT INTO deliveries (channel_key, persona_id, line_id) VALUES (?, ?, ?)",
        (stored.channel_key, persona_id, stored.id),
    )
    return stored


async def insert_private_line(tx: Tx, line: Line, persona_id: str) -> Line:
    """Store `line` for one persona alone, in the caller's transaction (a persona's note, say)."""
    return await _deliver_privately(tx, line, persona_id)


async def append_line(
    db: Database, channel_key: str, kind: LineKind, author_id: str, author_name: str, text: str
) -> Line:
    """Store a line and deliver it to every current participant, in one transaction."""
    async with db.transaction() as tx:
        return await insert_line(tx, channel_key, kind, author_id, author_name, text)


async def set_membership(db: Database, channel_key: str, persona_id: str, *, active: bool, marker_text: str) -> bool:
    """Invite (active=True) or dismiss a persona and deliver the marker line to whoever is then present.

    Returns False when nothing changed (already a participant, or not one). A dismissed persona
    keeps its deliveries; it simply receives nothing new.
    """
    now = time.time()
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            f"SELECT active FROM participants WHERE channel_key = {RULES_OF} AND persona_id = ?",
            (channel_key, persona_id),
        )
        if (row is not None and bool(row["active"]) == active) or (row is None and not active):
            return False
        await own_rules_in(tx, channel_key)  # a manager's change in a thread: the thread keeps its own
        if active:
            await tx.execute(
                "INSERT INTO participants (channel_key, persona_id, position, active, joined_at) "
                "VALUES (?, ?, (SELECT COALESCE(MAX(position), -1) + 1 FROM participants WHERE channel_key = ?), 1, ?) "
                "ON CONFLICT (channel_key, persona_id) DO UPDATE SET active = 1, position = excluded.position, "
                "joined_at = excluded.joined_at",
                (channel_key, persona_id, channel_key, now),
            )
        else:
            await tx.execute(
                "UPDATE participants SET active = 0 WHERE channel_key = ? AND persona_id = ?", (channel_key, persona_id)
            )
            # Dismissed from a channel, a persona leaves the threads that keep participants of their own too.
            for thread in await tx.fetch_all(
                "SELECT p.channel_key FROM participants p JOIN channels c ON c.key = p.channel_key "
                "WHERE c.parent_key = ? AND c.own_rules = 1 AND p.persona_id = ? AND p.active = 1",
                (channel_key, persona_id),
            ):
                await tx.execute(
                    "UPDATE participants SET active = 0 WHERE channel_key = ? AND persona_id = ?",
                    (thread[0], persona_id),
                )
                await insert_line(tx, thread[0], LineKind.MARKER, "system", "system", marker_text)
        await insert_line(tx, channel_key, LineKind.MARKER, "system", "system", marker_text)
    return True


async def recent_lines_for(
    db: Database, channel_key: str, persona_id: str, *, limit: int, before_id: int | None = None
) -> list[Line]:
    """The newest lines delivered to a persona, newest first: an index range scan of `limit` rows.

    Messages still waiting in the inbox are left out until their own round: each round sees the
    conversation as it stood when its message came up, whatever arrived behind it.
    """
    rows = await db.fetch_all(
        "SELECT l.* FROM deliveries d JOIN lines l ON l.id = d.line_id "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id < ? "
        "AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = d.line_id) "
        "ORDER BY d.line_id DESC LIMIT ?",
        (channel_key, persona_id, before_id if before_id is not None else 2**62, limit),
    )
    return [line_of(row) for row in rows]


async def recent_line_ids_for(
    db: Database, channel_key: str, persona_id: str, *, limit: int, before_id: int | None = None
) -> list[int]:
    """The ids of recent_lines_for's lines, without reading the lines: the deliveries index alone."""
    rows = await db.fetch_all(
        "SELECT d.line_id FROM deliveries d "
        "WHERE d.channel_key = ? AND d.persona_id = ? AND d.line_id < ? "
        "AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = d.line_id) "
        "ORDER BY d.line_id DESC LIMIT ?",
        (channel_key, persona_id, before_id if before_id is not None else 2**62, limit),
    )
    return [int(row[0]) for row in rows]


async def lines_by_id(db: Database, ids: Sequence[int]) -> list[Line]:
    """The stored lines with these ids, in no particular order."""
    if not ids:
        return []
    rows = await db.fetch_all(f"SELECT * FROM lines WHERE id IN ({', '.join('?' * len(ids))})", tuple(ids))
    return [line_of(row) for row in rows]


async def recent_channel_line_ids(db: Database, channel_key: str, *, limit: int) -> list[int]:
    """The ids of the channel's newest lines, newest first (what the moderator reads), without
    waiting messages: the lines themselves are read only when not known yet (they never change)."""
    rows = await db.fetch_all(
        "SELECT id FROM lines l WHERE channel_key = ? AND text <> '' "
        "AND author_id NOT LIKE 'note:%' "  # a persona's private note is no channel line (storage/mailbox.py)
        "AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.line_id = l.id) "
        "ORDER BY id DESC LIMIT ?",
        (channel_key, limit),
    )
    return [int(row[0]) for row in rows]


async def recent_channel_lines(db: Database, channel_key: str, *, limit: int) -> list[Line]:
    """The channel's newest lines, oldest first, without waiting messages."""
    ids = await recent_channel_line_ids(db, channel_key, limit=limit)
    by_id = {line.id: line for line in await lines_by_id(db, ids)}
    return [by_id[line_id] for line_id in reversed(ids)]


async def last_persona_speaker(db: Database, channel_key: str) -> str | None:
    row = await db.fetch_one(
        "SELECT author_id FROM lines WHERE channel_key = ? AND kind = 'persona' ORDER BY id DESC LIMIT 1",
        (channel_key,),
    )
    return row["author_id"] if row else None


async def forget_processed_events(db: Database, older_than_seconds: float) -> int:
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM processed_events WHERE seen_at < ?", (time.time() - older_than_seconds,))


async def append_private_note(db: Database, channel_key: str, persona_id: str, text: str) -> Line:
    """A note only one persona receives."""
    async with db.transaction() as tx:
        return await _deliver_privately(
            tx, Line(0, channel_key, LineKind.MARKER, "system", "system", text, time.time()), persona_id
        )


async def append_persona_turn(
    db: Database,
    channel_key: str,
    persona_id: str,
    persona_name: str,
    text: str,
    tool_calls: Sequence[ToolCall],
    signature: str | None = None,
) -> Line:
    """A persona's line with the tool calls it made and the thought signatures its model sent with
    them. Everyone present hears the text; a turn that only calls tools is kept for the persona
    alone, so its calls can be paired with their results."""
    line = Line(
        0,
        channel_key,
        LineKind.PERSONA,
        persona_id,
        persona_name,
        text,
        time.time(),
        tuple(tool_calls),
        None,
        signature,
    )
    async with db.transaction() as tx:
        if text:
            stored = await _insert(tx, line)
            await _deliver_to_participants(tx, stored)
            return stored
        return await _deliver_privately(tx, line, persona_id)


async def append_tool_result(db: Database, channel_key: str, persona_id: str, call: ToolCall, result: str) -> Line:
    """The result of one of a persona's tool calls, for that persona alone."""
    line = Line(0, channel_key, LineKind.MARKER, "system", call.name, result, time.time(), call_id=call.id)
    async with db.transaction() as tx:
        return await _deliver_privately(tx, line, persona_id)
