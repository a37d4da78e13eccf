"""What the moderator benchmark counts as a good moderated round: it ends with FINISH within its limits,
the personas its line named speak first, in the order named, and every reason shown reads as plain words.
The benchmark's own checks of what the round posted, not the product's routing or its list of reasons."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

FINISH = "FINISH"
ROUND_IS_FULL = "the round has had its turns"  # the reason shown when the code, not the model, ends it
MAX_REASON_CHARS = 160
_WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_NOT_PROSE = re.compile(r"[{}<>\[\]|`\\_=]|\bnull\b|\bnone\b|^\W*$", re.IGNORECASE)


def readable(reason: str) -> bool:
    """A reason a person can read: a short line of at least two words, no markup, JSON or identifiers."""
    text = reason.strip()
    if not text or len(text) > MAX_REASON_CHARS or _NOT_PROSE.search(text):
        return False
    found = _WORDS.findall(text)
    return len(found) >= 2 and sum(len(w) for w in found) >= 0.6 * len(text.replace(" ", ""))


@dataclass(frozen=True)
class RoundScore:
    turns: int  # persona posts
    finished: bool  # the last decision shown is FINISH, after at most max_turns posts
    forced: bool  # ... because the round was full, not by the model's choice
    addressed_first: bool | None  # None when the line named nobody
    skipped: bool  # a "[system]" notice: a picked persona did not speak
    unreadable: list[str]

    @property
    def ok(self) -> bool:
        return self.finished and self.addressed_first is not False and not self.skipped and not self.unreadable


def score_round(
    posted: Sequence[str],
    picks: Sequence[tuple[str, str]],
    addressed: Sequence[str],
    max_turns: int,
    notices: Sequence[str] = (),
) -> RoundScore:
    """One round: who posted, in order (persona ids), the moderator's decisions shown ((persona id or
    FINISH, reason), in order), the persona ids the line named in order (labelled), the round's limit,
    and the "[system]" notices it drew."""
    finished = bool(picks) and picks[-1][0] == FINISH and len(posted) < max_turns
    forced = finished and picks[-1][1] == ROUND_IS_FULL
    first = None if not addressed else list(posted[: len(addressed)]) == list(addressed)
    unreadable = [reason for _, reason in picks if not readable(reason)]
    return RoundScore(len(posted), finished, forced, first, bool(notices), unreadable)
