"""Whether an action waits for a person: decided in code from configuration, never by a prompt."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from graph.risk import Risk
from storage.records import Approval, ApprovalMode


class Verdict(StrEnum):
    WAIT = "wait"  # ask an approver first
    RUN = "run"  # run now
    ANNOUNCE = "announce"  # run now and say so in the channel


class Trust(StrEnum):
    NEW = "new"
    PROFICIENT = "proficient"
    EXPERT = "expert"
    NOVICE = "new"  # NEW's name before issue 34: an alias, for code that still says it

    @classmethod
    def _missing_(cls, value: object) -> Trust | None:
        return cls.NEW if value == "novice" else None  # the level's name before issue 34


# With [approvals] trust_sets_mode, the mode a persona's level asks for its calls.
MODE_BY_TRUST = {
    Trust.NEW: ApprovalMode.IN_COMMAND,
    Trust.PROFICIENT: ApprovalMode.IN_THE_LOOP,
    Trust.EXPERT: ApprovalMode.ON_THE_LOOP,
}


DEFAULT_SENSITIVE = ("publish", "send", "schedule", "delete", "pay", "share")


@dataclass(frozen=True)
class PolicySettings:
    sensitive: Collection[str] = DEFAULT_SENSITIVE
    max_actions_per_turn: int = 3
    auto_relax: bool = False
    trust_sets_mode: bool = False  # a persona's trust level chooses the mode of its calls (mode_for)
    max_cost: float = math.inf  # an action estimated to cost more always waits
    min_confidence: float = 0.0  # a call stated less sure than this (or not saying) always waits; 0 is off
    action_costs: Mapping[str, float] = field(default_factory=dict)  # the deployment's own estimates
    announce_immediate: bool = False  # say in the channel what ran at once, read-only tools too
    auto_approve_risk: Risk | None = None  # in-the-loop: a call at or below this risk runs at once; None is off


@dataclass(frozen=True)
class ToolStanding:
    """What config and approvers said about one MCP tool: read-only in config, or approved always here."""

    read_only: bool = False
    approved_always: bool = False
    # Config gave this tool its own risk ([mcp.servers.X] risk = { TOOL = ... }): only such a risk
    # lets [approvals] auto_approve_risk run it. A server-wide level also covers tools the server
    # adds later, which nobody has looked at.
    own_risk: bool = False


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    # Why it waits whatever the mode, for the approval request; empty when the mode alone says so.
    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


# A name's words, whatever its casing or separators: "deleteNote", "delete-note", "Delete_note" and
# "DELETE NOTE" are all delete + note; "HTTPDelete" is http + delete.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_words(name: str) -> tuple[str, ...]:
    """The lower-case words of an action's or a tool's name."""
    return tuple(word.lower() for word in _WORD.findall(name))


def is_sensitive(action: str, sensitive: Collection[str]) -> bool:
    """`publish_post` is sensitive when one of its words ("publish") or the whole name is configured,
    whatever the casing or the separators of either: `deleteNote`, `delete-note` and `Delete_note`
    are as sensitive as `delete_note`."""
    words = name_words(action)
    configured = {name_words(entry) for entry in sensitive}
    return words in configured or any((word,) in configured for word in words)


def wait_triggers(
    *, actions_in_turn: int, cost: float, confidence: float | None, settings: PolicySettings
) -> list[tuple[str, str]]:
    """The triggers that send an action to a person whatever the channel's mode: (kind, why), the
    kind burst, cost or confidence."""
    found = []
    if actions_in_turn > settings.max_actions_per_turn:  # an unusual burst always gets a person's eyes
        why = f"{actions_in_turn} actions in one turn > max_actions_per_turn {settings.max_actions_per_turn}"
        found.append(("burst", why))
    if cost > settings.max_cost:
        found.append(("cost", f"estimated cost {cost:g} > max_cost {settings.max_cost:g}"))
    if settings.min_confidence > 0:
        # A call that states no confidence has not shown it is sure enough: it waits too.
        if confidence is None:
            found.append(("confidence", f"no confidence stated (min_confidence {settings.min_confidence:g})"))
        elif confidence < settings.min_confidence:
            found.append(("confidence", f"confidence {confidence:g} < min_confidence {settings.min_confidence:g}"))
    return found


def always_wait_reasons(
    *, actions_in_turn: int, cost: float, confidence: float | None, settings: PolicySettings
) -> list[str]:
    """Why an action goes to a person whatever the channel's mode, one reason a trigger."""
    found = wait_triggers(actions_in_turn=actions_in_turn, cost=cost, confidence=confidence, settings=settings)
    return [why for _, why in found]


def mode_for(channel_mode: ApprovalMode, trust: Trust, *, trust_sets_mode: bool, mcp_tool: bool) -> ApprovalMode:
    """The mode a persona's call is judged in. Without trust_sets_mode, the channel's. With it, the
    persona's level chooses (new in-command, proficient in-the-loop, expert on-the-loop), except
    that a channel set to in-command keeps every call there (how a manager takes trust back in one
    channel), and an MCP tool is never judged looser than in-the-loop: trust never relaxes a tool."""
    if not trust_sets_mode or channel_mode is ApprovalMode.IN_COMMAND:
        return channel_mode
    chosen = MODE_BY_TRUST[trust]
    return ApprovalMode.IN_THE_LOOP if mcp_tool and chosen is ApprovalMode.ON_THE_LOOP else chosen


def verdict(
    action: str,
    *,
    mode: ApprovalMode,
    actions_in_turn: int,
    trust: Trust,
    settings: PolicySettings,
    cost: float = 0.0,
    confidence: float | None = None,
    tool: ToolStanding | None = None,
    risk: Risk = Risk.HIGH,
) -> Decision:
    """Whether `action` waits, runs, or runs and is announced; and, when a trigger beyond the
    channel's mode makes it wait, why (requests waiting for the mode's own reason say nothing more).

    An MCP tool (`tool` given) is sensitive unless config lists it read-only, whatever its server's
    annotations say; one an approver chose to "Approve always" in this channel runs like a read-only one.
    Trust (auto_relax) relaxes only the built-in sensitive actions, never an MCP tool. In the loop, a
    call whose `risk` (graph/risk.py) is at or below [approvals] auto_approve_risk runs at once: a
    built-in action's declared risk, or an MCP tool's own (never its server's one level for all)."""
    reasons = always_wait_reasons(actions_in_turn=actions_in_turn, cost=cost, confidence=confidence, settings=settings)
    if reasons:
        return Decision(Verdict.WAIT, tuple(reasons))
    mode = mode_for(mode, trust, trust_sets_mode=settings.trust_sets_mode, mcp_tool=tool is not None)  # trust's mode
    if mode is ApprovalMode.IN_COMMAND:
        return Decision(Verdict.WAIT)
    if mode is ApprovalMode.ON_THE_LOOP:
        return Decision(Verdict.ANNOUNCE)
    sensitive = is_sensitive(action, settings.sensitive) if tool is None else not tool.read_only
    if not sensitive or tool is not None and tool.approved_always:
        return Decision(Verdict.RUN)
    if risk.at_most(settings.auto_approve_risk) and (tool is None or tool.own_risk):
        return Decision(Verdict.RUN)
    if settings.auto_relax and trust is Trust.EXPERT and tool is None:  # trust never relaxes an MCP tool
        return Decision(Verdict.ANNOUNCE)
    return Decision(Verdict.WAIT)


def revision_of(action: str, rejected: Sequence[Approval]) -> int | None:
    """The rejected approval a new proposal revises: the last one for the same action, else the
    last rejected one; None when nothing was just rejected."""
    same = [a for a in rejected if a.action == action]
    chosen = same or list(rejected)
    return chosen[-1].id if chosen else None
