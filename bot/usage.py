"""Token usage: every model call's tokens stored per channel, persona and role, the `/usage` report,
and `[limits] channel_tokens_per_day`, the daily budget that stops new rounds in a channel until
the next UTC day. Human lines past the budget are still stored (like the flood limits); the channel
is told once a day, and so are its approvers."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from graph.observe import ModelCall
from personas import Persona
from storage import usage
from storage.database import Database

REPORT_DAYS = 30
ROLE_NAMES = {"moderator": "the moderator", "planner": "the planner", "judge": "the judge"}


def utc_day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def budget_notice(limit: int) -> str:
    return (
        f"This channel has used its {limit:,} model tokens for today. Messages are kept, and replies "
        "start again tomorrow (UTC)."
    )


class TokenBook:
    def __init__(self, db: Database, tokens_per_day: int, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.tokens_per_day = tokens_per_day
        self.clock = clock
        self._told: set[tuple[str, str]] = set()  # (channel key, day) already told of the budget

    async def record(self, call: ModelCall) -> None:
        tokens = (call.input_tokens, call.output_tokens, call.thinking_tokens)
        if call.channel_key and any(tokens):
            day = utc_day(self.clock())
            await usage.add_usage(self.db, day, call.channel_key, call.persona_id, call.role, call.model, tokens)

    async def spent(self, channel_key: str) -> bool:
        """Whether the channel has reached today's budget (never, with no budget)."""
        if not self.tokens_per_day:
            return False
        return await usage.channel_tokens(self.db, channel_key, utc_day(self.clock())) >= self.tokens_per_day

    def first_refusal_today(self, channel_key: str) -> bool:
        """True once per channel and UTC day: the refusal that tells the channel and its approvers."""
        told = (channel_key, utc_day(self.clock()))
        if told in self._told:
            return False
        self._told = {t for t in self._told if t[1] == told[1]} | {told}
        return True

    async def report(self, channel_key: str, personas: Mapping[str, Persona]) -> str:
        now = self.clock()
        today = await usage.usage_since(self.db, channel_key, utc_day(now))
        month = await usage.usage_since(self.db, channel_key, utc_day(now - (REPORT_DAYS - 1) * 86400))
        lines = [f"Model tokens in this channel (input + output + thinking), today and the last {REPORT_DAYS} days:"]
        today_by = {(t.persona_id, t.role): t.total for t in today}
        for total in month:
            who = _who(total.persona_id, total.role, personas)
            lines.append(
                f"- {who}: {today_by.get((total.persona_id, total.role), 0):,} today, {total.total:,} in "
                f"{REPORT_DAYS} days ({total.calls:,} calls; {total.thinking_tokens:,} thinking)"
            )
        if not month:
            lines.append(f"- none in the last {REPORT_DAYS} days")
        if self.tokens_per_day:
            used = sum(t.total for t in today)
            lines.append(f"Today's budget: {used:,} of {self.tokens_per_day:,} tokens.")
        return "\n".join(lines)


def _who(persona_id: str, role: str, personas: Mapping[str, Persona]) -> str:
    if role == "persona" or persona_id:
        persona = personas.get(persona_id)
        name = persona.display_name if persona else persona_id or "?"
        return name if role == "persona" else f"{name} ({role})"
    return ROLE_NAMES.get(role, role)
