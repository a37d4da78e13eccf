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


async def forget(db: Database, channel_key: str, tool: str, actor: str) -> bool:
    """Withdraw the grant; False when there was none."""
    async with db.transaction() as tx:
        removed = await tx.execute("DELETE FROM tool_grants WHERE channel_key = ? AND tool = ?", (channel_key, tool))
        if removed:
            await tx.execute(
                "INSERT INTO audit_log (at, channel_key, persona_id, approval_id, action, event, actor, detail) "
                "VALUES (?, ?, '', NULL, ?, 'rejected', ?, 'approve always withdrawn: waits for approval again')",
                (time.time(), channel_key, tool, actor),
            )
    return bool(removed)
