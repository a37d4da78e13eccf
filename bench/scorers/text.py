"""What the scorers mean by "the answer holds this": whole words, case-insensitive, numbers written one way.

Pure functions over strings, shared by every scorer; none of them comes from the product."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
# A thousands separator between digits ("12,000", "12 000" with a no-break or narrow space, "12'000");
# a plain space is not one, or "spot 3 100" would read as 3100.
_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f'’](?=\d{3}(?!\d))")
# "21st" is 21.
_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th)\b")
# "8am" is "8 am"; "otter-42" stays one word (the hyphen joins it).
_LETTER_DIGIT = re.compile(r"(?<=\d)(?=[^\W\d_])|(?<=[^\W\d_])(?=\d)")
# A word, with what joins its parts inside it: "otter-42", "2.4", "12:30", "rosa's"; never a
# trailing full stop.
_WORD = re.compile(r"[^\W_]+(?:[-.:/'’][^\W_]+)*")


def words(text: str) -> tuple[str, ...]:
    """The text as normalised words: case-folded, numbers without thousands separators or ordinal endings,
    number words up to twenty as digits, a possessive 's dropped."""
    text = _LETTER_DIGIT.sub(" ", _ORDINAL.sub("", _THOUSANDS.sub("", text.casefold())))
    found = []
    for word in _WORD.findall(text):
        word = word.replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        found.append(_NUMBER_WORDS.get(word, word))
    return tuple(found)


def mentions(text: str, phrase: str) -> bool:
    """`phrase` stands in `text` as whole consecutive words: "tom" is not in "tomorrow", "12,000" is in
    "12000 euros"."""
    wanted, seen = words(phrase), words(text)
    if not wanted:
        return False
    width = len(wanted)
    return any(seen[start : start + width] == wanted for start in range(len(seen) - width + 1))


def mentions_any(text: str, phrases: Iterable[str]) -> bool:
    return any(mentions(text, phrase) for phrase in phrases)


def shingles(text: str, size: int = 5) -> set[tuple[str, ...]]:
    """Every run of `size` words in `text` (the whole text when it is shorter): how copies are found."""
    found = words(text)
    if len(found) < size:
        return {tuple(found)} if found else set()
    return {tuple(found[i : i + size]) for i in range(len(found) - size + 1)}
