"""Plain dataclasses returned by the query functions. No database types leak out of storage/."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class LineKind(StrEnum):
    HUMAN = "human"
    PERSONA = "persona"
    MARKER = "marker"


class ApprovalMode(StrEnum):
    IN_COMMAND = "in-command"  # every action waits for a person
    IN_THE_LOOP = "in-the-loop"  # sensitive actions wait
    ON_THE_LOOP = "on-the-loop"  # nothing waits; executed actions are announced


_STRICTNESS = (ApprovalMode.ON_THE_LOOP, ApprovalMode.IN_THE_LOOP, ApprovalMode.IN_COMMAND)


def stricter_mode(first: ApprovalMode, second: ApprovalMode) -> ApprovalMode:
    """The mode that makes more actions wait: a thread's own mode never loosens its channel's."""
    return max(first, second, key=_STRICTNESS.index)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    EXECUTED = "executed"
    FAILED = "failed"
    RUNNING = "running"  # approved, and its run claimed by one process
    UNKNOWN = "unknown"  # the run was cut short by a stop: it may or may not have happened


@dataclass(frozen=True, slots=True)
class Channel:
    key: str
    moderated: bool
    max_turns: int | None
    scene: str
    approval_mode: ApprovalMode = ApprovalMode.IN_THE_LOOP
    paused: bool = False
    paused_after_failures: bool = False  # paused by [approvals] failures_before_pause: an approver resumes
    show_reasons: bool | None = None  # None: the configured default
    recruit: bool | None = None  # None: the configured default
    moderator_prompt: str = ""  # "" means the default prompt
    stop_requested: bool = False
    next_speaker: str | None = None
    last_decisions: tuple[str, ...] = ()
    failures_in_a_row: int = 0  # model failures since the last turn that spoke


@dataclass(frozen=True, slots=True)
class RequestPlace:
    """Where an approval request was posted, in its platform's own ids, and who decided it there."""

    platform: str  # slack, discord
    channel: str
    message: str
    decider: str | None = None  # a platform user id


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call a persona made, as its model returned it (id, action name, arguments)."""

    id: str
    name: str
    args: dict[str, Any]
    signature: str | None = None  # the thought signature its model sent with it (Gemini 3), replayed unchanged


@dataclass(frozen=True, slots=True)
class Line:
    id: int
    channel_key: str
    kind: LineKind
    author_id: str
    author_name: str
    text: str
    created_at: float
    tool_calls: tuple[ToolCall, ...] = ()  # on a persona's own line: the calls it made with it
    call_id: str | None = None  # on a tool result (a marker only its persona receives): the call it answers
    signature: str | None = None  # on a persona's own line: its text's thought signature (Gemini 3)


@dataclass(frozen=True, slots=True)
class Approval:
    id: int
    batch: str
    call_id: str
    channel_key: str
    thread: str | None
    persona_id: str
    action: str
    args: dict[str, Any]
    status: ApprovalStatus
    requested_at: float
    expires_at: float
    decided_by: str | None
    decided_at: float | None
    comment: str | None
    incident: bool
    result: str | None
    revises: int | None = None  # the rejected approval this one is a revised proposal of
    runner: str | None = None  # the process that claimed the run
    reason: str = ""  # why it waits for a person, as the approval policy said
    confidence: float | None = None  # how sure the model said it was, when it said
    original_args: dict[str, Any] | None = None  # as the persona asked, when an approver edited `args`
    decided_by_id: str | None = None  # the decider's platform user id (decided_by is only a display name)
    decided_by_team: str | None = None  # and, on Slack, their workspace
    risk: str = ""  # low, medium, high or critical (graph/risk.py); "" for one requested before risks
    task: TaskStep | None = None  # the task step it serves, when a task's step asked for it


@dataclass(frozen=True, slots=True)
class TaskStep:
    """The task step an action serves: step `step` of `steps` of task #`task_id`, titled `title`."""

    task_id: int
    title: str
    step: int
    steps: int

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "title": self.title, "step": self.step, "steps": self.steps}

    @classmethod
    def of(cls, value: dict[str, Any] | None) -> TaskStep | None:
        """From as_dict's form (a batch, a checkpoint), or None."""
        return (
            cls(int(value["task_id"]), str(value["title"]), int(value["step"]), int(value["steps"])) if value else None
        )


@dataclass(frozen=True, slots=True)
class AuditEvent:
    id: int
    at: float
    channel_key: str
    persona_id: str
    approval_id: int | None
    action: str
    event: str
    actor: str | None
    detail: str
    actor_id: str | None = None  # a person's platform user id, when a person acted
    actor_team: str | None = None  # their Slack workspace
    risk: str | None = None  # the risk of the approval it concerns


@dataclass(frozen=True, slots=True)
class TrustCounts:
    """People's decisions on one persona's requests in one workspace or guild, since its last incident."""

    persona_id: str
    approved: int = 0
    rejected: int = 0
    failed: int = 0  # approved by a person, then the action failed
    incidents: int = 0  # rejections marked as incidents, ever: each starts the count again
    first_at: float | None = None  # the first counted decision
    reset_at: float | None = None  # the last incident: tasks that ended before it do not count either


@dataclass(frozen=True, slots=True)
class EndedTask:
    """A task that ended, for trust: its status, its plan (JSON, graph/tasks.py's) and when it ended."""

    status: str
    plan: str | None
    ended_at: float
    rolled_back: bool = False  # someone asked to roll it back (/task cancel rollback)
