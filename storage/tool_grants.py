"""'Approve always': one MCP tool allowed to run without an approval in one channel, until withdrawn."""

from __future__ import annotations

import time
from dataclasses import dataclass

from storage.database import Database


@dataclass(frozen=True, slots=True)
class ToolGrant:
    channel_key: str
    tool: str  # "SERVER.TOOL"
    granted_by: str
    granted_at: float


async def grant(db: Database, channel_key: str, tool: str, granted_by: str) -> None:
    """Record (or renew) the grant, with an audit entry, in one transaction."""
    now = time.time()
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO tool_grants (channel_key, tool, granted_by, granted_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (channel_key, tool) DO UPDATE SET granted_by = excluded.granted_by, "
            "granted_at = excluded.granted_at",
            (channel_key, tool, granted_by, now),
        )
        await tx.execute(
            "INSERT INTO audit_log (at, channel_key, persona_id, approval_id, action, event, actor, detail) "
            "VALUES (?, ?, '', NULL, ?, 'approved', ?, 'approve always: runs without approval in this channel')",
            (now, channel_key, tool, granted_by),
        )


async def is_granted(db: Database, channel_key: str, tool: str) -> bool:
    row = await db.fetch_one("SELECT 1 FROM tool_grants WHERE channel_key = ? AND tool = ?", (channel_key, tool))
    return row is not None


async def grants(db: Database, channel_key: str) -> list[ToolGrant]:
    rows = await db.fetch_all("SELECT * FROM tool_grants WHERE channel_key = ? ORDER BY tool", (channel_key,))
    return [ToolGrant(r["channel_key"], r["tool"], r["granted_by"], r["granted_at"]) for r in rows]


async def forget(db: Database, channel_key: str, tool: str, actor: str) -> list[str]:
    """Withdraw the grant in the channel and in each of its threads (a grant an approver made in a
    thread must not outlive its channel's withdrawal), each with an audit entry; the channels it
    was withdrawn in, the channel itself first (none when there was no grant)."""
    async with db.transaction() as tx:
        rows = await tx.fetch_all(
            "SELECT channel_key FROM tool_grants WHERE tool = ? AND (channel_key = ? OR channel_key IN "
            "(SELECT key FROM channels WHERE parent_key = ?)) ORDER BY channel_key <> ?, channel_key",
            (tool, channel_key, channel_key, channel_key),
        )
        for row in rows:
            await tx.execute("DELETE FROM tool_grants WHERE channel_key = ? AND tool = ?", (row["channel_key"], tool))
            await tx.execute(
                "INSERT INTO audit_log (at, channel_key, persona_id, approval_id, action, event, actor, detail) "
                "VALUES (?, ?, '', NULL, ?, 'rejected', ?, 'approve always withdrawn: waits for approval again')",
                (time.time(), row["channel_key"], tool, actor),
            )
    return [str(row["channel_key"]) for row in rows]
