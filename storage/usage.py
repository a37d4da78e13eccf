"""Model token usage per UTC day, channel, persona and role; and the counts /metrics reads at a scrape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage.database import Database
from storage.threads import ROOT_OF


@dataclass(frozen=True, slots=True)
class UsageTotal:
    persona_id: str  # "" for the moderator, planner and coordinator
    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    thinking_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens


UsageKey = tuple[str, str, str, str, str]
"""(day, channel key, persona id, role, model): one row of token_usage."""
UsageCounts = tuple[int, int, int, int]
"""(calls, input, output, thinking tokens)."""


async def add_usage(db: Database, counts: Mapping[UsageKey, UsageCounts]) -> None:
    """Add model calls and their tokens to their days' rows, in one transaction."""
    rows = [(*key, *value) for key, value in counts.items()]
    async with db.transaction() as tx:
        await tx.execute_many(
            "INSERT INTO token_usage (day, channel_key, persona_id, role, model, calls, input_tokens, output_tokens, "
            "thinking_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (channel_key, day, persona_id, role, model) DO UPDATE SET "
            "calls = token_usage.calls + excluded.calls, "
            "input_tokens = token_usage.input_tokens + excluded.input_tokens, "
            "output_tokens = token_usage.output_tokens + excluded.output_tokens, "
            "thinking_tokens = token_usage.thinking_tokens + excluded.thinking_tokens",
            rows,
        )


async def channel_tokens(db: Database, channel_key: str, day: str) -> int:
    """Every token the model calls of the channel a key is in (itself, or a thread's parent) and of
    all its threads used on `day`: a thread spends its channel's budget."""
    row = await db.fetch_one(
        "SELECT COALESCE(SUM(input_tokens + output_tokens + thinking_tokens), 0) FROM token_usage "
        f"WHERE day = ? AND (channel_key = COALESCE({ROOT_OF}, ?) "
        f"OR channel_key IN (SELECT key FROM channels WHERE parent_key = COALESCE({ROOT_OF}, ?)))",
        (day, channel_key, channel_key, channel_key, channel_key),
    )
    return int(row[0]) if row else 0


async def usage_since(db: Database, channel_key: str, first_day: str) -> list[UsageTotal]:
    """The channel's totals per persona and role from `first_day` (inclusive) on, largest first."""
    rows = await db.fetch_all(
        "SELECT persona_id, role, SUM(calls), SUM(input_tokens), SUM(output_tokens), SUM(thinking_tokens) "
        "FROM token_usage WHERE channel_key = ? AND day >= ? GROUP BY persona_id, role",
        (channel_key, first_day),
    )
    totals = [UsageTotal(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in rows]
    return sorted(totals, key=lambda t: (-t.total, t.role, t.persona_id))


async def approval_counts(db: Database) -> dict[str, int]:
    """How many approvals are in each status."""
    rows = await db.fetch_all("SELECT status, COUNT(*) FROM approvals GROUP BY status")
    return {str(r[0]): int(r[1]) for r in rows}


async def queue_depths(db: Database) -> Sequence[int]:
    """How many messages wait for a round in each channel that has any."""
    rows = await db.fetch_all("SELECT COUNT(*) FROM inbox GROUP BY channel_key")
    return [int(r[0]) for r in rows]
