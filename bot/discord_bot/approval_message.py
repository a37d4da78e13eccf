"""An approval request on Discord, rendered: its text while it waits and once decided, and the
message itself, posted with the buttons (bot/discord_bot/approvals.py) and edited as the approval
is decided. Where each request was posted is kept in bot/request_places.py. The words of an
outcome are the approvals core's (bot/approvals.py)."""

from __future__ import annotations

import asyncio
import logging
import re

import discord

from bot.approvals import outcome, request_context
from bot.discord_bot.delivery import MESSAGE_LIMIT
from bot.discord_bot.inbound import channel_id_of
from bot.request_places import Place, RequestPlaces
from bot.revisions import more_arguments, more_characters
from personas import Persona
from storage.records import Approval, ApprovalStatus

# -- the request text --------------------------------------------------------------------------------
# What an approval request says in Discord, while it waits and after it is decided.
#
# Plain text, no embed: Roundtable is invited without Embed Links (client.py's INVITE_PERMISSIONS), and a bot's embeds
# are hidden where it lacks that permission. The request and its outcome are the same message:
# the last line changes from the expiry to who decided and what happened.

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


def approval_text(approval: Approval, persona: Persona, *, decider_id: str | None = None) -> str:
    action = approval.action.replace("`", "")[:40]  # inside a code span: shown as is, no escapes
    head = f"**Approval #{approval.id}**: {_safe(persona.display_name, 80)} wants to run `{action}`"
    if approval.revises:
        head += f" (revises #{approval.revises})"
    if context := request_context(approval, lambda text: _safe(text, 80)):
        head += f"\n{context}"
    if approval.reason:
        head += f"\nWaits: {_safe(approval.reason, 200)}"
    last = status_line(approval, decider_id)
    budget = MESSAGE_LIMIT - len(head) - len(last) - 2
    shown = [f"> {_safe(str(key), 40)}: {_value(str(value))}" for key, value in approval.args.items()]
    args = _fit(shown, budget)
    return "\n".join([head, *args, last])


def status_line(approval: Approval, decider_id: str | None) -> str:
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


def _value(text: str) -> str:
    """One argument on one line: at most VALUE_LIMIT characters of it, then how many are missing."""
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) <= VALUE_LIMIT:
        return _safe(flat, VALUE_LIMIT)
    keep = VALUE_LIMIT - len(more_characters(len(flat)))
    return _safe(flat[:keep], VALUE_LIMIT) + more_characters(len(flat) - keep)


def _fit(lines: list[str], budget: int) -> list[str]:
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) + 1 > budget - 60:
            kept.append(f"> {more_arguments(len(lines) - len(kept))}")
            break
        kept.append(line)
    return kept


# -- the request messages ----------------------------------------------------------------------------
# The approval request messages: posted by the bot with buttons, then edited as the approval is decided.
#
# Two edits can race for one request: the click shows "Approved by …; running it now" while the
# resumed flow shows the final outcome. A lock per approval orders them, and once a final outcome is
# shown nothing replaces it. Edits go through the bot's own REST API (not the interaction token),
# since an expiry or a late execution can come long after the click's 15 minutes.

log = logging.getLogger(__name__)

PLATFORM = "discord"
NO_MENTIONS = discord.AllowedMentions.none()
# An unknown outcome is not final either: an approver may run it again.
_NOT_FINAL = (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING, ApprovalStatus.UNKNOWN)


class ApprovalBoard:
    def __init__(self, client: discord.Client, places: RequestPlaces) -> None:
        self._client = client
        self.places = places
        self._locks: dict[int, asyncio.Lock] = {}
        self._settled: set[int] = set()

    async def post_request(self, approval: Approval, persona: Persona, buttons: discord.ui.View) -> None:
        """Raises discord.py's and aiohttp's errors; the port decides what a failed post means."""
        channel = self._client.get_partial_messageable(channel_id_of(approval.channel_key))
        message = await channel.send(approval_text(approval, persona), view=buttons, allowed_mentions=NO_MENTIONS)
        await self.places.remember(approval.id, Place(str(message.channel.id), str(message.id)))

    async def show(self, approval: Approval, persona: Persona, buttons: discord.ui.View | None = None) -> bool:
        """Edit the request to show the approval's state, its buttons replaced by `buttons` (an unknown
        outcome's [Run again] and [Close]) or removed. False when no request message is known (the
        approval went to Slack, or its post failed). Raises on a failed edit."""
        place = await self.places.place(approval.id)
        if place is None or not (place.channel.isdigit() and place.message.isdigit()):
            return False
        async with self._locks.setdefault(approval.id, asyncio.Lock()):
            if approval.id in self._settled:
                return True  # a final outcome is already showing
            decider = await self.places.decider(approval.id)
            message = self._client.get_partial_messageable(int(place.channel)).get_partial_message(int(place.message))
            text = approval_text(approval, persona, decider_id=decider if decider and decider.isdigit() else None)
            await message.edit(content=text, view=buttons, allowed_mentions=NO_MENTIONS)
            if approval.status not in _NOT_FINAL:
                self._settled.add(approval.id)
                self._locks.pop(approval.id, None)
        return True
