"""Plain dataclasses returned by the query functions. No database types leak out of storage/."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class LineKind(StrEnum):
    HUMAN = "human"
    PERSONA = "persona"
    MARKER = "marker"


@dataclass(frozen=True, slots=True)
class Channel:
    key: str
    moderated: bool
    max_turns: int | None
    scene: str


@dataclass(frozen=True, slots=True)
class Line:
    id: int
    channel_key: str
    kind: LineKind
    author_id: str
    author_name: str
    text: str
    created_at: float
