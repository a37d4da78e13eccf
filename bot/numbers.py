"""Whole numbers people send (command arguments, button values, header fields): the one parser.

str.isdigit() accepts "²" and "①", which int() refuses; int() accepts " 7", "+7" and "7_0"; and
SQLite refuses integers beyond 64 bits. So a number is ASCII digits only, within its range, or nothing.
"""

from __future__ import annotations

ID_DIGITS = 15
MAX_ID = 10**ID_DIGITS - 1  # below 2**53: exact in SQLite, PostgreSQL bigint, JSON and JavaScript alike


def whole_number(text: str, low: int, high: int) -> int | None:
    """text as an int when it is ASCII digits only and low <= value <= high; None for anything else."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)):
        return None
    value = int(text)
    return value if low <= value <= high else None


def record_id(text: str) -> int | None:
    """A stored record's id (an approval's), 1 to MAX_ID, written "12" or "#12"; None for anything else."""
    return whole_number(text.removeprefix("#"), 1, MAX_ID)
