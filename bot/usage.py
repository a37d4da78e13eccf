"""Token usage: every model call's tokens stored per channel, persona and role, the `/usage` report,
and `[limits] channel_tokens_per_day`, the daily budget that stops new rounds in a channel until
the next UTC day. Human lines past the budget are still stored (like the flood limits); the channel
is told once a day, and so are its approvers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from graph.observe import ModelCall
from personas import Persona
from storage import usage
from storage.database import Database

REPORT_DAYS = 30
FLUSH_SECONDS = 1.0
ROLE_NAMES = {"moderator": "the moderator", "planner": "the planner", "judge": "the judge"}


def utc_day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def budget_notice(limit: int) -> str:
    return (
        f"This channel has used its {limit:,} model tokens for today. Messages are kept, and replies "
        "start again tomorrow (UTC)."
    )


def budget_refusal(limit: int) -> str:
    """The answer to a command that would call a model after the budget is spent."""
    return f"This channel has used its {limit:,} model tokens for today: that waits until tomorrow (UTC)."


class TokenBook:
    """Model calls' tokens, counted in memory and written in one transaction per FLUSH_SECONDS (and
    when the app closes), so that a model call costs the engine a dictionary update, not a commit."""

    def __init__(self, db: Database, tokens_per_day: int, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.tokens_per_day = tokens_per_day
        self.clock = clock
        self._told: set[tuple[str, str]] = set()  # (channel key, day) already told of the budget
        self._pending: dict[usage.UsageKey, usage.UsageCounts] = {}
        self._flush: asyncio.Task[None] | None = None

    async def record(self, call: ModelCall) -> None:
        if not call.channel_key or not call.total_tokens:
            return
        key = (utc_day(self.clock()), call.channel_key, call.persona_id, call.role, call.model)
        calls, inputs, outputs, thinking = self._pending.get(key, (0, 0, 0, 0))
        self._pending[key] = (
            calls + 1,
            inputs + call.input_tokens,
            outputs + call.output_tokens,
            thinking + call.thinking_tokens,
        )
        if self._flush is None:
            self._flush = asyncio.create_task(self._flush_later(), name="usage:flush")

    async def _flush_later(self) -> None:
        await asyncio.sleep(FLUSH_SECONDS)
        self._flush = None
        await self.flush()

    async def flush(self) -> None:
        """Write what is counted so far."""
        pending, self._pending = self._pending, {}
        if pending:
            await usage.add_usage(self.db, pending)

    async def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        await self.flush()

    async def spent(self, channel_key: str) -> bool:
        """Whether the channel (a thread's parent, with all its threads) has reached today's budget
        (never, with no budget)."""
        if not self.tokens_per_day:
            return False
        if self._pending:  # counted in memory, perhaps in one of its threads: the query sees them all
            await self.flush()
        return await usage.channel_tokens(self.db, channel_key, utc_day(self.clock())) >= self.tokens_per_day

    async def refusal(self, channel_key: str) -> str | None:
        """None while the channel is within today's budget; past it, the budget's notice the first
        time today, else "" (graph/tool_steps.py ends a turn's tool steps with it)."""
        if not await self.spent(channel_key):
            return None
        return budget_notice(self.tokens_per_day) if self.first_refusal_today(channel_key) else ""

    def first_refusal_today(self, channel_key: str) -> bool:
        """True once per channel and UTC day: the refusal that tells the channel and its approvers."""
        told = (channel_key, utc_day(self.clock()))
        if told in self._told:
            return False
        self._told = {t for t in self._told if t[1] == told[1]} | {told}
        return True

    async def report(self, channel_key: str, personas: Mapping[str, Persona]) -> str:
        await self.flush()
        now = self.clock()
        today = await usage.usage_since(self.db, channel_key, utc_day(now))
        month = await usage.usage_since(self.db, channel_key, utc_day(now - (REPORT_DAYS - 1) * 86400))
        lines = [f"Model tokens in this channel (input + output + thinking), today and the last {REPORT_DAYS} days:"]
        today_by = {(t.persona_id, t.role): t.total for t in today}
        for total in month:
            who = _who(total.persona_id, total.role, personas)
            lines.append(
                f"- {who}: {today_by.get((total.persona_id, total.role), 0):,} today, {total.total:,} in "
                f"{REPORT_DAYS} days ({total.calls:,} call{'' if total.calls == 1 else 's'}; {total.thinking_tokens:,} thinking)"
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
