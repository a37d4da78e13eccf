"""The append-only audit log: who did what to which action, and when. Each entry tied to an approval
carries that approval's risk (graph/risk.py), so the log alone says how risky each step was."""

from __future__ import annotations

import time
from collections.abc import Sequence

from storage.database import Database, Tx
from storage.records import Approval, AuditEvent

Person = tuple[str, str | None]
"""(platform user id, Slack team or None): who decided, as the platform knows them; names can change."""


async def write_audit(
    tx: Tx,
    approval: Approval | None,
    *,
    channel_key: str,
    persona_id: str,
    action: str,
    event: str,
    actor: str | None,
    detail: str = "",
    person: Person | None = None,
) -> None:
    actor_id, actor_team = person or (None, None)
    await tx.execute(
        "INSERT INTO audit_log (at, channel_key, persona_id, approval_id, action, event, actor, detail, actor_id, "
        "actor_team, risk) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            time.time(),
            channel_key,
            persona_id,
            approval.id if approval else None,
            action,
            event,
            actor,
            detail,
            actor_id,
            actor_team,
            (approval.risk or None) if approval else None,
        ),
    )


async def audit(
    db: Database, *, channel_key: str, persona_id: str, action: str, event: str, actor: str | None, detail: str = ""
) -> None:
    """An audit entry with no approval behind it (an action that did not need one, or a refused call)."""
    async with db.transaction() as tx:
        await write_audit(
            tx,
            None,
            channel_key=channel_key,
            persona_id=persona_id,
            action=action,
            event=event,
            actor=actor,
            detail=detail,
        )


async def audit_events(db: Database, persona_ids: Sequence[str] | None = None) -> list[AuditEvent]:
    rows = await db.fetch_all("SELECT * FROM audit_log ORDER BY id")
    events = [AuditEvent(**{k: row[k] for k in row.keys()}) for row in rows]
    return [e for e in events if persona_ids is None or e.persona_id in persona_ids]
