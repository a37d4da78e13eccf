"""The engine's tunables, as plain values: bot/ maps config.toml onto this."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SHARE_PER_CHANNEL, SHARE_PER_PERSONA = "channel", "persona"
FAILURE_THRESHOLD: Mapping[str, float] = {"research": 0.5, "writing": 0.2, "actions": 0.0}
"""The share of a task's steps that may fail, by the task's kind, before the task fails."""


@dataclass(frozen=True)
class MemorySettings:
    """What a persona keeps beyond its window (graph/memory.py)."""

    max_notes: int = 20
    share_notes: str = SHARE_PER_CHANNEL  # or SHARE_PER_PERSONA: a persona's notes follow it in its workspace
    summary_tokens: int = 400
    summaries: bool = True  # False: nothing is folded (the benchmark's "memory off")


@dataclass(frozen=True)
class EngineSettings:
    max_turns: int = 6
    token_budget: int = 3000
    min_chars: int = 20
    max_review_retries: int = 2
    max_sentences: int = 3  # a reply is cut after this many sentences (at a sentence end)
    judge: bool = False  # a second model grades drafts that passed the text checks (graph/judge.py)
    moderator_window: int = 30
    model_attempts: int = 4
    backoff_seconds: float = 1.0
    approval_timeout_seconds: float = 30 * 60
    failures_before_alert: int = 3
    failures_before_pause: int = 5  # model failures in a row that pause a channel's replies; 0 never
    show_reasons: bool = False  # a channel may say otherwise with /moderate reasons on|off
    moderator_prompt: str = ""  # "" is the built-in prompt; a channel may set its own
    recruit: bool = False  # whether the moderator may invite personas; a channel may say otherwise
    team_cap: int = 10  # the most personas a channel may hold through recruitment
    mailbox_max_pending: int = 5  # undelivered notes one persona may have waiting; more are dropped
    max_task_steps: int = 8  # the most steps in a task's plan
    max_artifact_chars: int = 4000  # the most of one step's result kept whole for the steps after it
    task_integrator: str = ""  # the persona who writes a task's answer when present ("": graph/task_answer.py's rule)
    max_parallel_steps: int = 3  # a task's steps that run side by side
    step_attempts: int = 3  # tries of a task step before it fails
    failure_threshold: Mapping[str, float] = field(default_factory=lambda: dict(FAILURE_THRESHOLD))
    max_replans: int = 2  # times the planner checks a task's plan on its own
    memory: MemorySettings = field(default_factory=MemorySettings)
    timezone: str = "UTC"  # the channel's: the scene tells the date and time there, each turn
    max_tool_steps: int = 4  # the most model calls in one persona turn that uses tools ([actions] max_steps)
