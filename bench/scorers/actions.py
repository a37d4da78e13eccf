"""Did the model propose what one labelled line asked for? For the built-in actions (bench/actions.py)
and the MCP tools (bench/mcp_tools.py): both label a line {"action": NAME, ARG: VALUE, ...} or
{"action": "none"}, and both propose (name, arguments), so one scorer serves the two.

Per line, counting every proposal:
- a proposal of the asked action is a true positive; exact when its arguments equal the labelled ones
  once case, quotes, '#' and whitespace are set aside (a time "at" is compared as the instant it names);
- any other proposal is a false positive, and on a line that asked for an action, the asked action is
  then still a miss (a wrong action is a false positive AND a miss);
- a request with no proposal of its action is a miss; a proposal on a "none" line is a false positive.

Pure: the labelled expectation and what was proposed in, counts out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NONE = "none"
_SET_ASIDE = str.maketrans(dict.fromkeys("'\"‘’“”«»„#", ""))
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Proposal:
    """One proposed call, as the product would put it to the person: its name and arguments."""

    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Counts:
    tp: int = 0  # proposals of the asked action
    fp: int = 0  # proposals of anything else (or of anything, on a "none" line)
    fn: int = 0  # requests whose action was not proposed
    exact: int = 0  # true positives whose arguments are the labelled ones

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.exact + other.exact)


def total(counts: Iterable[Counts]) -> Counts:
    return sum(counts, Counts())


def _text(value: Any) -> str:
    return _SPACE.sub(" ", str(value).translate(_SET_ASIDE)).strip().casefold()


def _instant(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None  # a time with no offset names no one instant


def same_value(key: str, got: Any, expected: Any) -> bool:
    if key == "at":
        wanted = _instant(expected)
        return wanted is not None and _instant(got) == wanted
    return _text(got) == _text(expected)


def same_args(got: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """The labelled arguments, each the same; an argument the label does not name must be empty
    (a schema's default such as 0 or ""), not a value the person never asked for."""
    if any(key not in got or not same_value(key, got[key], value) for key, value in expected.items()):
        return False
    return all(value in (None, "", 0, False) for key, value in got.items() if key not in expected)


def score(expect: Mapping[str, Any], proposed: Sequence[Proposal]) -> Counts:
    """The counts for one line: `expect` is its label, `proposed` every call the product proposed."""
    asked = str(expect["action"])
    wanted = {key: value for key, value in expect.items() if key != "action"}
    if asked == NONE:
        return Counts(fp=len(proposed))
    matching = [p for p in proposed if p.name == asked]
    if not matching:
        return Counts(fp=len(proposed), fn=1)
    # One true positive for the line (the best of its proposals of the asked action); a repeat is extra.
    exact = any(same_args(p.args, wanted) for p in matching)
    return Counts(tp=1, fp=len(proposed) - 1, exact=int(exact))
