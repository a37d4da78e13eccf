"""What the scorers mean by "the answer holds this": whole words, case-insensitive, numbers written one way.

Pure functions over strings, shared by the scorers; none of them comes from the product."""

from __future__ import annotations

import re
from collections.abc import Iterable

# "12,000", "12 000" and "12.000" are 12000; "21st" is 21: a number is its digits.
_THOUSANDS = re.compile(r"(?<=\d)[,.\u202f\u00a0 ](?=\d{3}(?!\d))")
_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th)\b")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def normalised(text: str) -> str:
    """Case-folded, curly quotes straight, thousands separators and ordinal endings gone, spaces single."""
    folded = text.casefold().translate(_QUOTES)
    folded = _ORDINAL.sub("", _THOUSANDS.sub("", folded))
    return " ".join(folded.split())


def mentions(text: str, phrase: str) -> bool:
    """`phrase` stands in `text` as whole words: "tom" is not in "tomorrow", "12,000" is in "12000 euros"."""
    wanted = normalised(phrase)
    if not wanted:
        return False
    return re.search(rf"(?<![\w]){re.escape(wanted)}(?![\w])", normalised(text)) is not None


def mentions_any(text: str, phrases: Iterable[str]) -> bool:
    return any(mentions(text, phrase) for phrase in phrases)


def words(text: str) -> list[str]:
    return WORD.findall(normalised(text))


def shingles(text: str, size: int = 5) -> set[tuple[str, ...]]:
    """Every run of `size` words in `text` (the whole text when it is shorter): how copies are found."""
    found = words(text)
    if len(found) < size:
        return {tuple(found)} if found else set()
    return {tuple(found[i : i + size]) for i in range(len(found) - size + 1)}
