"""The value of /rate and its parser (see bot/command_values.py): the console's 👍 and 👎 on a
persona's post, which Slack and Discord take as reactions (bot/votes.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from bot.command_errors import UsageError
from bot.numbers import whole_number

RATE_WINDOW = 20  # /rate counts back this many of the personas' posts here


@dataclass(frozen=True)
class Rate:
    """/rate lists the personas' newest posts here, numbered from 1, the newest; /rate N up|down
    [reason] rates post N (a new vote on it replaces the old)."""

    permission: ClassVar[str] = "rate"
    number: int = 0  # 0: list them
    up: bool = True
    reason: str = ""


def parse_rate(rest: str) -> Rate:
    words = rest.split(maxsplit=2)
    if not words:
        return Rate()
    number = whole_number(words[0].removeprefix("#"), 1, RATE_WINDOW)
    if number is None or len(words) < 2 or words[1].lower() not in ("up", "down"):
        raise UsageError(f"(N is a post's number as /rate lists them, 1 to {RATE_WINDOW}: 1 is the newest)")
    up = words[1].lower() == "up"
    reason = words[2].strip() if len(words) > 2 else ""
    if up and reason:
        raise UsageError("(a reason goes with down)")
    return Rate(number, up, reason)
