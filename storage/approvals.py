"""Approval records: requested, decided, claimed and run. A decision is one atomic UPDATE: the first wins; each change is audited (storage/audit.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from storage.audit import Person as Person
from storage.audit import audit as audit
from storage.audit import audit_events as audit_events
from storage.audit import write_audit as _audit
from storage.database import Database, Row
from storage.records import Approval, ApprovalStatus, RequestPlace, TaskStep


def _approval(row: Row) -> Approval:
    return Approval(
        id=row["id"],
        batch=row["batch"],
        call_id=row["call_id"],
        channel_key=row["channel_key"],
        thread=row["thread"],
        persona_id=row["persona_id"],
        action=row["action"],
        args=json.loads(row["args"]),
        status=ApprovalStatus(row["status"]),
        requested_at=row["requested_at"],
        expires_at=row["expires_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        comment=row["comment"],
        incident=bool(row["incident"]),
        result=row["result"],
        revises=row["revises"],
        runner=row["runner"],
        reason=row["reason"],
        confidence=row["confidence"],
        original_args=json.loads(row["original_args"]) if row["original_args"] is not None else None,
        decided_by_id=row["decided_by_id"],
        decided_by_team=row["decided_by_team"],
        risk=row["risk"],
        task=TaskStep(row["task_id"], row["task_title"], row["task_step"], row["task_steps"])
        if row["task_id"] is not None
        else None,
    )


_TAGS = "risk, task_id, task_title, task_step, task_steps"


def _tags(risk: str, task: TaskStep | None) -> tuple[Any, ...]:
    return (risk, *((task.task_id, task.title, task.step, task.steps) if task else (None,) * 4))


async def request(
    db: Database,
    *,
    batch: str,
    call_id: str,
    channel_key: str,
    thread: str | None,
    persona_id: str,
    action: str,
    args: dict[str, Any],
    timeout_seconds: float,
    revises: int | None = None,
    reason: str = "",
    confidence: float | None = None,
    risk: str = "",
    task: TaskStep | None = None,
) -> tuple[Approval, bool]:
    """The approval for (batch, call_id), created and audited only the first time: (approval, created).
    `reason` says why it waits; `confidence` is what the model stated with the call; `task` the
    task step it serves."""
    now = time.time()
    async with db.transaction() as tx:
        created = (
            await tx.execute(
                "INSERT INTO approvals (batch, call_id, channel_key, thread, persona_id, action, args, "
                f"requested_at, expires_at, revises, reason, confidence, {_TAGS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (batch, call_id) DO NOTHING",
                (
                    batch,
                    call_id,
                    channel_key,
                    thread,
                    persona_id,
                    action,
                    json.dumps(args),
                    now,
                    now + timeout_seconds,
                    revises,
                    reason,
                    confidence,
                    *_tags(risk, task),
                ),
            )
            == 1
        )
        approval = _approval(
            await tx.fetch_one("SELECT * FROM approvals WHERE batch = ? AND call_id = ?", (batch, call_id))
        )
        if created:
            await _audit(
                tx,
                approval,
                channel_key=channel_key,
                persona_id=persona_id,
                action=action,
                event="requested",
                actor=persona_id,
                detail=json.dumps(args),
            )
    return approval, created


async def remember_place(db: Database, approval_id: int, place: RequestPlace) -> None:
    """Where the request was posted, in the platform's own ids (opaque here)."""
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO request_places (approval_id, platform, channel, message) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (approval_id) DO UPDATE SET platform = excluded.platform, channel = excluded.channel, "
            "message = excluded.message",
            (approval_id, place.platform, place.channel, place.message),
        )


async def remember_decider(db: Database, approval_id: int, user_id: str) -> None:
    """The platform user id of who decided, beside the request they decided on."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE request_places SET decider = ? WHERE approval_id = ?", (user_id, approval_id))


async def place_of(db: Database, approval_id: int) -> RequestPlace | None:
    row = await db.fetch_one("SELECT * FROM request_places WHERE approval_id = ?", (approval_id,))
    if row is None:
        return None
    return RequestPlace(row["platform"], row["channel"], row["message"], row["decider"])


async def get(db: Database, approval_id: int) -> Approval | None:
    row = await db.fetch_one("SELECT * FROM approvals WHERE id = ?", (approval_id,))
    return _approval(row) if row else None


async def in_batch(db: Database, batch: str) -> list[Approval]:
    return [_approval(r) for r in await db.fetch_all("SELECT * FROM approvals WHERE batch = ? ORDER BY id", (batch,))]


async def awaits_decision(db: Database, batch: str) -> bool:
    """Whether anything in the batch is still waiting for a person: its flow waits until nothing is."""
    return await db.fetch_one("SELECT 1 FROM approvals WHERE batch = ? AND status = 'pending'", (batch,)) is not None


async def pending(db: Database, channel_key: str | None = None) -> list[Approval]:
    if channel_key is None:
        rows = await db.fetch_all("SELECT * FROM approvals WHERE status = 'pending' ORDER BY id")
    else:
        rows = await db.fetch_all(
            "SELECT * FROM approvals WHERE status = 'pending' AND channel_key = ? ORDER BY id", (channel_key,)
        )
    return [_approval(r) for r in rows]


async def decide(
    db: Database,
    approval_id: int,
    status: ApprovalStatus,
    *,
    actor: str,
    comment: str = "",
    incident: bool = False,
    person: Person | None = None,
) -> Approval | None:
    """Move a pending approval to approved, rejected or expired. None when it was no longer pending.
    `person`: the approver who decided (none for an expiry or a withdrawal)."""
    assert status in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED)
    user_id, team = person or (None, None)
    return await _transition(
        db,
        "status = ?, decided_by = ?, decided_at = ?, comment = ?, incident = ?, decided_by_id = ?, "
        "decided_by_team = ? WHERE id = ? AND status = 'pending'",
        (status.value, actor, time.time(), comment, int(incident), user_id, team, approval_id),
        event=status.value,
        actor=actor,
        detail=("incident: " if incident else "") + comment,
        person=person,
    )


async def approve_edited(
    db: Database, approval_id: int, args: dict[str, Any], *, actor: str, person: Person | None = None
) -> Approval | None:
    """Approve a pending approval with arguments an approver edited: the edited arguments are the
    ones that run, the requested ones are kept (original_args), and the audit entry names both.
    One transaction, like any decision; None when it was no longer pending."""
    return await _transition(
        db,
        "status = 'approved', decided_by = ?, decided_at = ?, comment = '', original_args = args, args = ?, "
        "decided_by_id = ?, decided_by_team = ? WHERE id = ? AND status = 'pending'",
        (actor, time.time(), json.dumps(args), *(person or (None, None)), approval_id),
        event="approved",
        actor=actor,
        person=person,
        detail=lambda approved: f"arguments edited from {json.dumps(approved.original_args)} to {json.dumps(args)}",
    )


async def claim_run(db: Database, approval_id: int, runner: str) -> Approval | None:
    """Claim an approved action's run for `runner`, committed before it starts: None if it was not
    waiting to run (already claimed, run or never approved), so nothing ever runs twice."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "UPDATE approvals SET status = 'running', runner = ?, started_at = ? "
            "WHERE id = ? AND status = 'approved' RETURNING *",
            (runner, time.time(), approval_id),
        )
    return _approval(row) if row else None


POLICY = "policy"  # who let an action that needs no approval run: its audit entry's actor, its decider


async def claim_immediate(
    db: Database,
    *,
    batch: str,
    call_id: str,
    channel_key: str,
    thread: str | None,
    persona_id: str,
    action: str,
    args: dict[str, Any],
    runner: str,
    reason: str = "",
    confidence: float | None = None,
    risk: str = "",
    task: TaskStep | None = None,
) -> Approval:
    """The durable claim of an action that needs no approval, committed (with its audit entry and
    arguments) before it runs: it is then finished like an approved run, and a stop before the
    finish leaves a claim that start-up reports as an unknown outcome, never a second run."""
    now = time.time()
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "INSERT INTO approvals (batch, call_id, channel_key, thread, persona_id, action, args, requested_at, "
            f"expires_at, reason, confidence, status, decided_by, decided_at, runner, started_at, {_TAGS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (
                batch,
                call_id,
                channel_key,
                thread,
                persona_id,
                action,
                json.dumps(args),
                now,
                now,
                reason,
                confidence,
                POLICY,
                now,
                runner,
                now,
                *_tags(risk, task),
            ),
        )
        approval = _approval(row)
        await _audit(
            tx,
            approval,
            channel_key=channel_key,
            persona_id=persona_id,
            action=action,
            event="approved",
            actor=POLICY,
            detail="ran at once: "
            + json.dumps(args)
            + ("" if confidence is None else f" (stated confidence {confidence:g})"),
        )
    return approval


async def finish(db: Database, approval_id: int, *, ok: bool, result: str, actor: str | None = None) -> Approval | None:
    """Record the outcome of a claimed run, once: None if it was not running. `actor`: who finished
    it, when not the run itself (start-up recovery)."""
    status = ApprovalStatus.EXECUTED if ok else ApprovalStatus.FAILED
    return await _transition(
        db,
        "status = ?, result = ? WHERE id = ? AND status = 'running'",
        (status.value, result, approval_id),
        event=status.value,
        actor=actor,
        detail=result,
    )


async def with_status(db: Database, status: ApprovalStatus) -> list[Approval]:
    rows = await db.fetch_all("SELECT * FROM approvals WHERE status = ? ORDER BY id", (status.value,))
    return [_approval(r) for r in rows]


async def mark_unknown(db: Database, approval_id: int, runner: str, why: str = "") -> Approval | None:
    """A run `runner` started and never confirmed (its process stopped): outcome unknown, and `why`
    it could not be told (an MCP tool's effect is not observable, a look-up could not finish)."""
    result = f"{UNKNOWN_RESULT} ({why})" if why else UNKNOWN_RESULT
    return await _transition(
        db,
        "status = 'unknown', result = ? WHERE id = ? AND status = 'running' AND runner = ?",
        (result, approval_id, runner),
        event="failed",
        actor=None,
        detail=result,
    )


UNKNOWN_RESULT = "outcome unknown: the bot stopped while it ran"


async def settle_unknown(db: Database, approval_id: int, *, retry: bool, actor: str) -> Approval | None:
    """A person's answer to an unknown outcome: run it again (back to approved), or close it as
    failed without running it. None when it was not unknown (someone answered first)."""
    closed = f"closed by {actor} without running again"
    status, result = (ApprovalStatus.APPROVED, None) if retry else (ApprovalStatus.FAILED, closed)
    return await _transition(
        db,
        "status = ?, result = ?, runner = NULL WHERE id = ? AND status = 'unknown'",
        (status.value, result, approval_id),
        event="approved" if retry else "failed",
        actor=actor,
        detail="retry after an unknown outcome" if retry else closed,
    )


async def _transition(
    db: Database,
    update: str,
    params: tuple[Any, ...],
    *,
    event: str,
    actor: str | None,
    detail: str | Callable[[Approval], str],
    person: Person | None = None,
) -> Approval | None:
    """One guarded status change and its audit entry, in one transaction: `update` is the SET and
    WHERE of an UPDATE that matches only while the approval is in the state it moves from. A
    `detail` that needs the changed row (what it held before) is a function of it."""
    async with db.transaction() as tx:
        row = await tx.fetch_one(f"UPDATE approvals SET {update} RETURNING *", params)
        if row is None:
            return None
        approval = _approval(row)
        await _audit(
            tx,
            approval,
            channel_key=approval.channel_key,
            persona_id=approval.persona_id,
            action=approval.action,
            event=event,
            actor=actor,
            detail=detail if isinstance(detail, str) else detail(approval),
            person=person,
        )
    return approval


async def in_task(db: Database, task_id: int) -> list[Approval]:
    """Every approval a task's steps (and its rollback) made, oldest first."""
    rows = await db.fetch_all("SELECT * FROM approvals WHERE task_id = ? ORDER BY id", (task_id,))
    return [_approval(r) for r in rows]
