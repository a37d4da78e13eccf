"""What the first-turn benchmark counts as a first turn that worked: what the channel showed after a new
user's first line is a reply from a persona the line could expect (one it named, or any when it named
none), with words in it, and nothing else: no "[system]" notice, approval request or other machinery."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_POST = re.compile(r"^\[([^\]\n]{1,40})\] ?(.*)$", re.DOTALL)


def named(text: str, personas: Sequence[str]) -> list[str]:
    """The personas the line names (whole word, any case, with or without @), in the order named."""
    found = [(m.start(), p) for p in personas if (m := re.search(rf"(?<!\w)@?{re.escape(p)}\b", text, re.I))]
    return [p for _, p in sorted(found)]


@dataclass(frozen=True)
class FirstTurn:
    ok: bool
    why: str  # "" when ok


def score_first_turn(opener: str, shown: Sequence[str], personas: Sequence[str]) -> FirstTurn:
    """The opener, every line the console showed for it ("[Nova] text", "[system] ...") in order, and the
    display names of the personas present."""
    if not shown:
        return FirstTurn(False, "nothing was posted")
    expected = named(opener, personas) or list(personas)
    for number, line in enumerate(shown):
        post = _POST.match(line)
        speaker = post.group(1) if post else ""
        if speaker not in personas:
            return FirstTurn(False, f"machinery shown: {line!r}")
        if not post or not post.group(2).strip():
            return FirstTurn(False, f"an empty reply from {speaker}")
        if number == 0 and speaker not in expected:
            return FirstTurn(False, f"{speaker} answered first, not {' or '.join(expected)}")
    return FirstTurn(True, "")
