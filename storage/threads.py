"""Threads: a Slack or Discord thread is a channel with a history of its own that follows its parent
channel's rules (approval mode, pause, moderation, scene, participants) until a manager changes
one in the thread; its budget, flood windows and approvers are always its parent's. This is the one
place that says which channel's row applies."""

from __future__ import annotations

from storage.database import Tx

RULES_OF = (
    "(SELECT CASE WHEN parent_key IS NOT NULL AND own_rules = 0 THEN parent_key ELSE key END "
    "FROM channels WHERE key = ?)"
)
"""SQL: the key whose settings and participants apply in channel `?` (a thread's parent, or itself)."""
ROOT_OF = "(SELECT COALESCE(parent_key, key) FROM channels WHERE key = ?)"
"""SQL: the channel a thread is in (itself for a channel): its budget, flood windows and approvers."""
RULES = ("moderated", "max_turns", "scene", "approval_mode", "paused", "show_reasons", "recruit", "moderator_prompt")


async def own_rules_in(tx: Tx, key: str) -> None:
    """A manager changes a rule in a thread: from now on it keeps its own, starting from its parent's."""
    row = await tx.fetch_one("SELECT parent_key, own_rules FROM channels WHERE key = ?", (key,))
    if row is None or row["parent_key"] is None or row["own_rules"]:
        return
    parent = row["parent_key"]
    copied = ", ".join(f"{column} = (SELECT {column} FROM channels WHERE key = ?)" for column in RULES)
    await tx.execute(f"UPDATE channels SET own_rules = 1, {copied} WHERE key = ?", (*[parent] * len(RULES), key))
    await tx.execute(
        "INSERT INTO participants (channel_key, persona_id, position, active, quiet, joined_at) "
        "SELECT ?, persona_id, position, active, quiet, joined_at FROM participants WHERE channel_key = ? "
        "ON CONFLICT (channel_key, persona_id) DO UPDATE SET active = excluded.active, position = excluded.position, "
        "quiet = excluded.quiet",
        (key, parent),
    )
    await tx.execute(
        "UPDATE participants SET active = 0 WHERE channel_key = ? AND persona_id NOT IN "
        "(SELECT persona_id FROM participants WHERE channel_key = ?)",
        (key, parent),
    )
