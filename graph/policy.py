"""Whether an action waits for a person: decided in code from configuration, never by a prompt."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from storage.records import Approval, ApprovalMode


class Verdict(StrEnum):
    WAIT = "wait"  # ask an approver first
    RUN = "run"  # run now
    ANNOUNCE = "announce"  # run now and say so in the channel


class Trust(StrEnum):
    NOVICE = "novice"
    PROFICIENT = "proficient"
    EXPERT = "expert"


DEFAULT_SENSITIVE = ("publish", "send", "schedule", "delete", "pay", "share")


@dataclass(frozen=True)
class PolicySettings:
    sensitive: Collection[str] = DEFAULT_SENSITIVE
    max_actions_per_turn: int = 3
    auto_relax: bool = False


def is_sensitive(action: str, sensitive: Collection[str]) -> bool:
    """`publish_post` is sensitive when "publish" (its verb) or the whole name is configured."""
    return action in sensitive or action.split("_", 1)[0] in sensitive


def verdict(
    action: str, *, mode: ApprovalMode, actions_in_turn: int, trust: Trust, settings: PolicySettings
) -> Verdict:
    if actions_in_turn > settings.max_actions_per_turn:
        return Verdict.WAIT  # an unusual burst always gets a person's eyes
    if mode is ApprovalMode.IN_COMMAND:
        return Verdict.WAIT
    if mode is ApprovalMode.ON_THE_LOOP:
        return Verdict.ANNOUNCE
    if not is_sensitive(action, settings.sensitive):
        return Verdict.RUN
    if settings.auto_relax and trust is Trust.EXPERT:
        return Verdict.ANNOUNCE
    return Verdict.WAIT


def revision_of(action: str, rejected: Sequence[Approval]) -> int | None:
    """The rejected approval a new proposal revises: the last one for the same action, else the
    last rejected one; None when nothing was just rejected."""
    same = [a for a in rejected if a.action == action]
    chosen = same or list(rejected)
    return chosen[-1].id if chosen else None
