"""What an approval request says in Discord, while it waits and after it is decided.

Plain text, no embed: Roundtable is invited without Embed Links (invite.py), and a bot's embeds
are hidden where it lacks that permission. The request and its outcome are the same message:
the last line changes from the expiry to who decided and what happened.
"""

from __future__ import annotations

import re

import discord

from bot.approvals import outcome
from bot.discord_bot.delivery import MESSAGE_LIMIT
from personas import Persona
from storage.records import Approval, ApprovalStatus

VALUE_LIMIT = 300  # characters of one argument shown; the stored approval keeps all of it
RESULT_LIMIT = 300
_SPACE = re.compile(r"\s+")
_MARK = {
    ApprovalStatus.APPROVED: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.RUNNING: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.EXECUTED: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.FAILED: "\N{WARNING SIGN}",
    ApprovalStatus.UNKNOWN: "\N{WARNING SIGN}",
    ApprovalStatus.REJECTED: "\N{CROSS MARK}",
    ApprovalStatus.EXPIRED: "\N{HOURGLASS}",
}


def approval_text(approval: Approval, persona: Persona, *, decider_id: int | None = None) -> str:
    action = approval.action.replace("`", "")[:40]  # inside a code span: shown as is, no escapes
    head = f"**Approval #{approval.id}**: {_safe(persona.display_name, 80)} wants to run `{action}`"
    if approval.revises:
        head += f" (revises #{approval.revises})"
    last = status_line(approval, decider_id)
    budget = MESSAGE_LIMIT - len(head) - len(last) - 2
    shown = [f"> {_safe(str(key), 40)}: {_safe(str(value), VALUE_LIMIT)}" for key, value in approval.args.items()]
    args = _fit(shown, budget)
    return "\n".join([head, *args, last])


def status_line(approval: Approval, decider_id: int | None) -> str:
    """The approval's state in one line; `decider_id` (a Discord user) is shown as a mention that pings nobody."""
    who = f"<@{decider_id}>" if decider_id else _safe(approval.decided_by or "someone", 80)
    if approval.status is ApprovalStatus.PENDING:
        at = int(approval.expires_at)
        return f"Expires <t:{at}:t> (<t:{at}:R>). Approvers: use the buttons below."
    return f"{_MARK.get(approval.status, '')} {outcome(approval, who, clean=lambda text: _safe(text, RESULT_LIMIT))}".strip()


def _safe(text: str, limit: int) -> str:
    """One line, at most `limit` characters of the original, with markdown and mentions made inert."""
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return discord.utils.escape_mentions(discord.utils.escape_markdown(flat))


def _fit(lines: list[str], budget: int) -> list[str]:
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) + 1 > budget - 20:
            kept.append(f"> \N{HORIZONTAL ELLIPSIS} ({len(lines) - len(kept)} more)")
            break
        kept.append(line)
    return kept
