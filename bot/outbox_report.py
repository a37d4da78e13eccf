"""/outbox: what waits to be posted on Slack and Discord and what failed, for the approvers.

The entries are the durable outbox's (bot/outbox.py sends them; storage/outbox.py keeps them).
"""

from __future__ import annotations

from storage import outbox as stored
from storage.database import Database

ENTRY_NAMES = {  # an entry's kind, as the report and the approvers' notice of a failed post name it
    "post": "persona's line",
    "notice": "notice",
    "reason": "moderator's reason",
    "approvers": "message to the approvers",
    "request": "approval request",
    "decision": "approval outcome",
    "plan": "task plan",
}


async def outbox_report(db: Database, channel_key: str | None = None, *, limit: int = 10) -> str:
    """What waits and what failed (of one channel, or everywhere), for the approvers."""
    counts = await stored.counts(db, channel_key=channel_key)
    lines = [f"Outbox: {counts['waiting']} waiting, {counts['failed']} failed, {counts['sent']} sent."]
    for status, title in (("waiting", "Waiting"), ("failed", "Failed")):
        entries = await stored.listed(db, status, channel_key=channel_key, limit=limit)
        if entries:
            lines.append(f"{title}:")
            lines += [
                f"- #{e.id} {ENTRY_NAMES.get(e.kind, e.kind)} in {stored.conversation_of(e.channel_key, e.thread)}, "
                f"{_attempts(e)}{_why(e)}"
                for e in entries
            ]
    return "\n".join(lines)


def _attempts(entry: stored.Entry) -> str:
    return f"{entry.attempts} attempt{'s' if entry.attempts != 1 else ''}"


def _why(entry: stored.Entry) -> str:
    why = f": {entry.error}" if entry.error else ""
    # A failed post no longer holds its conversation back: the order it was part of cannot be kept.
    return f"{why}; skipped, the posts after it went on without it" if entry.status == "failed" else why
