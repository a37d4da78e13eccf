"""The trust count: people's decisions on each persona's actions, per workspace or guild, counted by the
database from the audit log and the approvals it names; and the tasks that ended there, whose steps
graph/trust.py counts per persona."""

from __future__ import annotations

from storage.database import Database
from storage.records import EndedTask, TrustCounts

# A person's decision: an approval or rejection with the decider's user id, or the failure of an
# action a person approved. Runs that needed nobody (read-only tools, on-the-loop) never count.
_PEOPLES_DECISIONS = """
WITH scoped AS (
    SELECT l.id, l.at, l.persona_id, l.event, l.detail, l.actor_id, a.decided_by_id AS approver
    FROM audit_log l
    JOIN channels c ON c.key = l.channel_key
    LEFT JOIN approvals a ON a.id = l.approval_id
    WHERE {tenant}
),
decided AS (
    SELECT * FROM scoped
    WHERE (event IN ('approved', 'rejected') AND actor_id IS NOT NULL)
       OR (event = 'failed' AND approver IS NOT NULL)
),
incidents AS (
    SELECT persona_id, MAX(id) AS last_id, COUNT(*) AS n, MAX(at) AS last_at
    FROM decided WHERE event = 'rejected' AND detail LIKE 'incident%' GROUP BY persona_id
)
SELECT d.persona_id,
    SUM(CASE WHEN d.event = 'approved' AND d.id > COALESCE(i.last_id, 0) THEN 1 ELSE 0 END) AS approved,
    SUM(CASE WHEN d.event = 'rejected' AND d.id > COALESCE(i.last_id, 0) THEN 1 ELSE 0 END) AS rejected,
    SUM(CASE WHEN d.event = 'failed' AND d.id > COALESCE(i.last_id, 0) THEN 1 ELSE 0 END) AS failed,
    MAX(COALESCE(i.n, 0)) AS incidents,
    MIN(CASE WHEN d.id > COALESCE(i.last_id, 0) THEN d.at END) AS first_at,
    MAX(i.last_at) AS reset_at
FROM decided d LEFT JOIN incidents i ON i.persona_id = d.persona_id
GROUP BY d.persona_id
"""
_TENANT = "COALESCE(NULLIF(c.tenant, ''), c.key)"  # a channel whose tenant is not known yet stands alone


async def trust_counts(db: Database, channel_key: str | None) -> dict[str, TrustCounts]:
    """People's decisions per persona in the workspace or guild of `channel_key` (None: everywhere,
    all tenants summed), counted by the database."""
    where, params = _scope(channel_key)
    rows = await db.fetch_all(_PEOPLES_DECISIONS.format(tenant=where), params)
    return {str(r[0]): TrustCounts(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[5], r[6]) for r in rows}


def _scope(channel_key: str | None) -> tuple[str, tuple[str, ...]]:
    if channel_key is None:
        return "1 = 1", ()
    return f"{_TENANT} = (SELECT {_TENANT} FROM channels c WHERE c.key = ?)", (channel_key,)


async def ended_tasks(db: Database, channel_key: str | None) -> list[EndedTask]:
    """The tasks that completed or failed in the workspace or guild of `channel_key` (None: everywhere),
    oldest first, each saying whether someone asked to roll it back. Tasks people stopped or
    cancelled count for nobody, so they are not read."""
    where, params = _scope(channel_key)
    rows = await db.fetch_all(
        "SELECT t.status, t.plan, t.updated_at, t.rolled_back_by IS NOT NULL FROM tasks t "
        f"JOIN channels c ON c.key = t.channel_key WHERE t.status IN ('completed', 'failed') AND {where} "
        "ORDER BY t.id",
        params,
    )
    return [EndedTask(str(r[0]), r[1], float(r[2]), bool(r[3])) for r in rows]
