"""The values of /memory and of /persona quiet|talk, and their parsers (see bot/command_values.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.command_errors import UsageError
from bot.numbers import record_id

PERSONA_VERBS = ("list", "invite", "dismiss", "quiet", "talk")  # /persona's


@dataclass(frozen=True)
class MemoryCommand:
    """/memory PERSONA (show), /memory PERSONA forget N, /memory PERSONA clear."""

    persona_id: str
    verb: Literal["show", "forget", "clear"] = "show"
    number: int = 0

    @property
    def permission(self) -> str:
        return "memory" if self.verb == "show" else f"memory_{self.verb}"


@dataclass(frozen=True)
class SetQuiet:
    """/persona quiet PERSONA_ID: it listens only (speaks when named); /persona talk undoes it."""

    persona_id: str
    quiet: bool

    @property
    def permission(self) -> str:
        return "persona_quiet" if self.quiet else "persona_talk"


def parse_memory(rest: str) -> MemoryCommand:
    words = rest.split()
    if len(words) == 1:
        return MemoryCommand(words[0].lower())
    if len(words) == 2 and words[1].lower() == "clear":
        return MemoryCommand(words[0].lower(), "clear")
    if len(words) == 3 and words[1].lower() == "forget" and (number := record_id(words[2])) is not None:
        return MemoryCommand(words[0].lower(), "forget", number)
    raise UsageError()
