"""Cancel with rollback: the undos of what a task did, newest first, each asked of an approver.

An action declares its undo: a built-in action in its definition (graph/actions.py `undo`:
publish_post -> delete_post), an MCP tool in config (`[mcp.servers.X] undo = { TOOL = "OTHER" }`).
The undo is called with the original call's arguments (for an MCP tool, those the undo tool's input
schema declares; the original result is not passed). What the task did is read from storage: every
action of its steps that executed (run at once or approved). The undos go into one approval batch,
one request each, newest first, run by the approval flow (graph/approval_flow.py) once all are
decided, without a persona follow-up: an approved one runs as the persona that did the original and
is audited like any action; a rejected or expired one is not run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graph.actions import ACTIONS, ActionCall
from graph.mcp import ToolCatalog, is_mcp_action
from graph.risk import Risk
from storage.records import Approval, ApprovalStatus

ROLLBACK_BATCH = "rollback:"  # a rollback's batch id starts so: its approvals are never undone themselves
UNDO_CALL = "undo-"  # an undo's call id: "undo-<the approval it takes back>"
_NOT_ASKED = (ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED)


@dataclass(frozen=True)
class Undo:
    """What takes back `done`: action `name` with `args`."""

    done: Approval
    name: str
    args: dict[str, Any]


def undo_of(done: Approval, tools: ToolCatalog | None) -> Undo | None:
    """The declared undo of an action that ran; None when it declares none."""
    if is_mcp_action(done.action):
        other = tools.undo_of(done.action) if tools is not None else None
        if other is None:
            return None
        declared = tools.tool(other) if tools is not None else None
        properties = declared.input_schema.get("properties") if declared is not None else None
        if isinstance(properties, dict):  # only what the undo tool takes: its schema refuses anything more
            return Undo(done, other, {k: v for k, v in done.args.items() if k in properties})
        return Undo(done, other, dict(done.args))
    spec = ACTIONS.get(done.action)
    return Undo(done, spec.undo, dict(done.args)) if spec is not None and spec.undo else None


def rollback_plan(
    in_task: Sequence[Approval], tools: ToolCatalog | None, claims: Mapping[int, str] | None = None
) -> tuple[list[Undo], list[Approval]]:
    """From every approval of a task and the undos claimed for it (storage/task_undos.py: the
    original's approval id -> the rollback batch that asked): the undos to ask for, newest first,
    and what ran but declares no undo. An action whose undo is already asked for (claimed, its
    request not out yet), pending, run or running is left out (a second /task cancel rollback asks
    only again for undos rejected or expired); a rollback's own actions are never undone."""
    asked = {a.call_id for a in in_task if a.batch.startswith(ROLLBACK_BATCH) and a.status not in _NOT_ASKED}
    turned_down = {(a.batch, a.call_id) for a in in_task if a.status in _NOT_ASKED}
    asked |= {
        f"{UNDO_CALL}{undoes}"
        for undoes, batch in (claims or {}).items()
        if (batch, f"{UNDO_CALL}{undoes}") not in turned_down
    }
    done = [
        a
        for a in in_task
        if a.status is ApprovalStatus.EXECUTED
        and not a.batch.startswith(ROLLBACK_BATCH)
        and f"{UNDO_CALL}{a.id}" not in asked
    ]
    undos: list[Undo] = []
    cannot: list[Approval] = []
    for action in sorted(done, key=lambda a: a.id, reverse=True):
        undo = undo_of(action, tools)
        if undo is None:
            cannot.append(action)
        else:
            undos.append(undo)
    return undos, cannot


def rollback_batch_id(channel_key: str, task_id: int) -> str:
    """A new rollback's batch id: its undos are claimed under it before its requests go out."""
    return f"{ROLLBACK_BATCH}{channel_key}:{task_id}:{uuid.uuid4().hex[:12]}"


def rollback_batch(
    batch_id: str,
    task_id: int,
    channel_key: str,
    thread: str | None,
    undos: Sequence[Undo],
    risk: Callable[[str], Risk],
) -> dict[str, Any]:
    """The approval batch of a rollback (graph/approval_flow.py ApprovalState): each undo a call of its
    own, by the persona that did the original, naming the task step it served; `risk` rates each."""
    return {
        "batch": batch_id,
        "channel_key": channel_key,
        "thread": thread,
        "persona_id": undos[0].done.persona_id,
        "task": undos[0].done.task.as_dict() if undos[0].done.task else None,
        "rollback": True,
        "calls": [
            {
                "call_id": f"{UNDO_CALL}{undo.done.id}",
                "name": undo.name,
                "args": undo.args,
                "revises": None,
                "reason": f"undoes #{undo.done.id}, {_described(undo.done)} (rollback of task #{task_id})",
                "confidence": None,
                "risk": risk(undo.name).value,
                "persona_id": undo.done.persona_id,
                "task": undo.done.task.as_dict() if undo.done.task else None,
            }
            for undo in undos
        ],
    }


def _described(done: Approval) -> str:
    return ActionCall(done.call_id, done.action, done.args).describe()
