"""Channels and their settings: moderation, participants (in join order), scene.

A thread (Slack or Discord) is a channel with a history of its own whose rules are its parent
channel's: approval mode, pause, moderation, scene and participants are read through the parent
(`RULES_OF`) until a manager changes one of them in the thread, which then keeps its own
(storage/threads.py). A round's own state (a stop request, the next speaker, its failures) is the
thread's. Each channel also records its tenant: the workspace or guild trust is counted in."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from storage.database import Database, Row, Tx
from storage.history import insert_line
from storage.records import ApprovalMode, Channel, LineKind, stricter_mode
from storage.threads import RULES, RULES_OF, own_rules_in

PAUSED_AFTER_FAILURES = 2  # `paused`: 0 no, 1 by /moderate pause, 2 after model failures in a row

FirstLine = tuple[LineKind, str, str, str]
"""kind, author id, author name, text"""


@dataclass(frozen=True)
class Place:
    """Where a channel sits: its tenant ("slack:T1", "discord:<guild>", "console"), for a thread
    the key of the channel it is in, and whether it is private (None: the adapter cannot tell)."""

    tenant: str
    parent_key: str | None = None
    private: bool | None = None


@lru_cache(maxsize=1024)  # a channel's last decisions change once a round, and are read at every turn
def _decisions(stored: str) -> tuple[str, ...]:
    return tuple(json.loads(stored))


def _channel(row: Row) -> Channel:
    return Channel(
        key=row["key"],
        moderated=bool(row["moderated"]),
        max_turns=row["max_turns"],
        scene=row["scene"],
        approval_mode=ApprovalMode(row["approval_mode"]),
        paused=bool(row["paused"]),
        paused_after_failures=row["paused"] == PAUSED_AFTER_FAILURES,
        show_reasons=None if row["show_reasons"] is None else bool(row["show_reasons"]),
        recruit=None if row["recruit"] is None else bool(row["recruit"]),
        moderator_prompt=row["moderator_prompt"],
        stop_requested=bool(row["stop_requested"]),
        next_speaker=row["next_speaker"],
        last_decisions=_decisions(row["last_decisions"]),
        failures_in_a_row=row["failures_in_a_row"],
    )


_RULES_READ = ", ".join(f"r.{column}" for column in RULES if column != "paused")
_GET_CHANNEL = (
    f"SELECT c.key, c.stop_requested, c.next_speaker, c.last_decisions, c.failures_in_a_row, {_RULES_READ}, "
    f"CASE WHEN c.paused = {PAUSED_AFTER_FAILURES} THEN c.paused WHEN r.paused <> 0 THEN r.paused "
    "ELSE p.paused END AS paused, p.approval_mode AS channel_approval_mode "
    "FROM channels c JOIN channels r ON r.key = "
    "CASE WHEN c.parent_key IS NOT NULL AND c.own_rules = 0 THEN c.parent_key ELSE c.key END "
    "JOIN channels p ON p.key = COALESCE(c.parent_key, c.key) WHERE c.key = ?"
)


async def get_channel(db: Database, key: str) -> Channel | None:
    """The channel as it applies: a thread's own round state with its parent's rules (a pause after
    model failures in the thread itself counts too). A pause of the channel a thread is in holds
    in the thread even when the thread keeps rules of its own, and so does its approval mode when
    it is the stricter: no thread is a way around them."""
    row = await db.fetch_one(_GET_CHANNEL, (key,))
    if row is None:
        return None
    channel = _channel(row)
    mode = stricter_mode(channel.approval_mode, ApprovalMode(row["channel_approval_mode"]))
    return channel if mode is channel.approval_mode else replace(channel, approval_mode=mode)


async def channel_keys(db: Database) -> list[str]:
    """Every channel's key (threads are in theirs)."""
    return [str(row[0]) for row in await db.fetch_all("SELECT key FROM channels WHERE parent_key IS NULL")]


async def threads_waiting(db: Database, key: str) -> list[str]:
    """The channel's threads that have messages waiting for a round (its pause held in all of them)."""
    rows = await db.fetch_all(
        "SELECT DISTINCT c.key FROM channels c JOIN inbox i ON i.channel_key = c.key WHERE c.parent_key = ? ORDER BY c.key",
        (key,),
    )
    return [str(row[0]) for row in rows]


async def root_key(db: Database, key: str) -> str:
    """The channel a thread is in; any other key unchanged."""
    row = await db.fetch_one("SELECT parent_key FROM channels WHERE key = ?", (key,))
    return str(row[0]) if row is not None and row[0] is not None else key


async def tenant_of(db: Database, key: str) -> str:
    """The channel's workspace or guild ("" when not recorded yet)."""
    row = await db.fetch_one("SELECT tenant FROM channels WHERE key = ?", (key,))
    return str(row[0]) if row is not None else ""


async def ensure_channel(
    db: Database,
    key: str,
    *,
    participants: Sequence[str],
    moderated: bool,
    first_line: FirstLine | None = None,
    place: Place | None = None,
) -> Channel:
    """The channel, created with the default participants the first time it is seen. `first_line`
    opens the history of a channel this call creates (a thread's parent message, say), exactly once.
    `place` is recorded when the channel has none yet."""
    existing = await get_channel(db, key)
    if existing and place is None:
        return existing
    async with db.transaction(urgent=True) as tx:  # on the way to acknowledging a message
        await create_in(tx, key, participants=participants, moderated=moderated, first_line=first_line, place=place)
    channel = await get_channel(db, key)
    assert channel is not None
    return channel


async def create_in(
    tx: Tx,
    key: str,
    *,
    participants: Sequence[str],
    moderated: bool,
    first_line: FirstLine | None = None,
    place: Place | None = None,
) -> bool:
    """Within tx: the channel with its participants (and first line) unless it exists; True when created.
    A thread's parent channel is created too, and `place` recorded on a channel that has none yet."""
    now = time.time()
    if place is not None and place.parent_key is not None:
        await create_in(tx, place.parent_key, participants=participants, moderated=moderated, place=Place(place.tenant))
    tenant, parent = (place.tenant, place.parent_key) if place else ("", None)
    private = None if place is None or place.private is None else int(place.private)
    created = await tx.execute(
        "INSERT INTO channels (key, moderated, created_at, tenant, parent_key, private) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (key) DO NOTHING",
        (key, int(moderated), now, tenant, parent, private),
    )
    if not created:
        if place is not None:  # a channel stored before its place was known
            await tx.execute(
                "UPDATE channels SET tenant = ?, parent_key = COALESCE(parent_key, ?) WHERE key = ? AND tenant = ''",
                (tenant, parent, key),
            )
        if private is not None:  # a channel made private (or public) since: who can read it now
            await tx.execute(
                "UPDATE channels SET private = ? WHERE key = ? AND (private IS NULL OR private <> ?)",
                (private, key, private),
            )
        return False
    await tx.execute_many(
        "INSERT INTO participants (channel_key, persona_id, position, joined_at) VALUES (?, ?, ?, ?)",
        [(key, persona_id, position, now) for position, persona_id in enumerate(participants)],
    )
    if first_line is not None:
        await insert_line(tx, key, *first_line)
    return True


async def speaking_participants(db: Database, key: str) -> list[tuple[str, bool]]:
    """Active persona ids in the order they joined, each with whether it listens only (/persona quiet),
    from the channel whose participants apply (a thread's parent unless it keeps its own)."""
    rows = await db.fetch_all(
        f"SELECT persona_id, quiet FROM participants WHERE channel_key = {RULES_OF} AND active = 1 ORDER BY position",
        (key,),
    )
    return [(row["persona_id"], bool(row["quiet"])) for row in rows]


async def set_quiet(db: Database, key: str, persona_id: str, quiet: bool) -> bool:
    """Whether it changed (False: not a participant here, or already so). In a thread that follows its
    channel, the thread takes its own rules first, as for any manager's change there."""
    async with db.transaction() as tx:
        await own_rules_in(tx, key)
        return bool(
            await tx.execute(
                "UPDATE participants SET quiet = ? WHERE channel_key = ? AND persona_id = ? AND active = 1 AND quiet <> ?",
                (int(quiet), key, persona_id, int(quiet)),
            )
        )


async def participants(db: Database, key: str) -> list[str]:
    """Active persona ids in the order they joined."""
    rows = await db.fetch_all(
        f"SELECT persona_id FROM participants WHERE channel_key = {RULES_OF} AND active = 1 ORDER BY position",
        (key,),
    )
    return [row["persona_id"] for row in rows]


async def set_moderated(db: Database, key: str, moderated: bool, max_turns: int | None = None) -> None:
    async with db.transaction() as tx:
        await own_rules_in(tx, key)
        await tx.execute(
            "UPDATE channels SET moderated = ?, max_turns = COALESCE(?, max_turns) WHERE key = ?",
            (int(moderated), max_turns, key),
        )


async def set_scene(db: Database, key: str, scene: str) -> None:
    async with db.transaction() as tx:
        await own_rules_in(tx, key)
        await tx.execute("UPDATE channels SET scene = ? WHERE key = ?", (scene, key))


async def set_approval_mode(db: Database, key: str, mode: ApprovalMode) -> None:
    async with db.transaction() as tx:
        await own_rules_in(tx, key)
        await tx.execute("UPDATE channels SET approval_mode = ? WHERE key = ?", (mode.value, key))


# Steering, one column each. The column name is ours, never a person's text.
_SETTINGS = {"paused", "show_reasons", "recruit", "moderator_prompt", "stop_requested", "next_speaker"}


async def set_setting(db: Database, key: str, column: str, value: bool | str | None) -> None:
    assert column in _SETTINGS, column
    stored = int(value) if isinstance(value, bool) else value
    async with db.transaction() as tx:
        if column in RULES:
            await own_rules_in(tx, key)
        await tx.execute(f"UPDATE channels SET {column} = ? WHERE key = ?", (stored, key))


async def pause_after_failures(db: Database, key: str) -> bool:
    """Pause the channel's replies after model failures in a row; False when it was paused already."""
    async with db.transaction() as tx:
        return (
            await tx.execute(
                "UPDATE channels SET paused = ? WHERE key = ? AND paused = 0", (PAUSED_AFTER_FAILURES, key)
            )
            == 1
        )


async def count_failure(db: Database, key: str) -> int:
    """One more model failure in a row in the channel; returns how many there are now."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE channels SET failures_in_a_row = failures_in_a_row + 1 WHERE key = ?", (key,))
        row = await tx.fetch_one("SELECT failures_in_a_row FROM channels WHERE key = ?", (key,))
    return int(row["failures_in_a_row"]) if row else 1


async def reset_failures(db: Database, key: str) -> None:
    """A turn spoke, or the failures paused the channel: the count starts again."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE channels SET failures_in_a_row = 0 WHERE key = ? AND failures_in_a_row > 0", (key,))


async def take_stop_request(db: Database, key: str) -> bool:
    """Whether /stop was asked for since the last check; the request is used up."""
    async with db.transaction() as tx:
        return (
            await tx.execute("UPDATE channels SET stop_requested = 0 WHERE key = ? AND stop_requested = 1", (key,)) == 1
        )


async def take_next_speaker(db: Database, key: str) -> str | None:
    """The persona named with /next, if any; the nomination is used up."""
    async with db.transaction() as tx:
        row = await tx.fetch_one("SELECT next_speaker FROM channels WHERE key = ?", (key,))
        if row is None or row["next_speaker"] is None:
            return None
        await tx.execute("UPDATE channels SET next_speaker = NULL WHERE key = ?", (key,))
        return str(row["next_speaker"])


async def set_last_decisions(db: Database, key: str, decisions: Sequence[str]) -> None:
    async with db.transaction() as tx:
        await tx.execute("UPDATE channels SET last_decisions = ? WHERE key = ?", (json.dumps(list(decisions)), key))
