"""What the two proposal benchmarks share (bench/actions.py: built-in actions; bench/mcp_tools.py: MCP
tools): one labelled line's outcome, the per-action breakdown, and the run itself (measure in a
scratch directory, print the table and the misses, rewrite its block of docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import rewrite_block
from graph.actions import ActionCall
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Outcome:
    """One labelled line: what it asked for (`{"action": "none"}` or the action and its arguments) and
    what the model proposed, once `check_call` accepted it."""

    line: str
    expected: dict[str, Any]
    proposed: ActionCall | None

    @property
    def wanted(self) -> bool:
        return self.expected["action"] != "none"

    @property
    def exact(self) -> bool:
        if self.proposed is None or self.proposed.name != self.expected["action"]:
            return False
        return self.same_args(self.proposed.args, {k: v for k, v in self.expected.items() if k != "action"})

    def same_args(self, got: dict[str, Any], expected: dict[str, Any]) -> bool:
        return got == expected


def by_action(outcomes: Sequence[Outcome], heading: str = "By action") -> str:
    """Per action asked for: the requests that became that proposal, and how many of those were exact."""
    parts = []
    for name in dict.fromkeys(o.expected["action"] for o in outcomes if o.wanted):
        asked = [o for o in outcomes if o.expected["action"] == name]
        hit = [o for o in asked if o.proposed is not None and o.proposed.name == name]
        parts.append(f"{name} {len(hit)}/{len(asked)} proposed, {sum(o.exact for o in hit)} exact")
    return f"{heading}: " + "; ".join(parts) + "."


Measure = Callable[[Path], Coroutine[Any, Any, tuple[list[Outcome], float]]]
"""Runs every labelled line in a scratch directory; the outcomes and the seconds they took."""
Report = Callable[[list[Outcome], float, float], str]
"""(outcomes, seconds, the load at the start) -> the block for docs/benchmarks.md."""


def run(measure: Measure, report: Report, name: str, docs: bool = True) -> None:
    """Measure, print the block and every miss (a line asked for nothing proposed, or the reverse, or
    inexact arguments), and rewrite the `name` block of docs/benchmarks.md (unless not `docs`)."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        outcomes, seconds = asyncio.run(measure(Path(scratch)))
    block = report(outcomes, seconds, load)
    print(block)
    for outcome in outcomes:
        if outcome.wanted != (outcome.proposed is not None) or (outcome.proposed and not outcome.exact):
            shown = outcome.proposed.describe() if outcome.proposed else "nothing"
            print(f"  {outcome.line!r}: expected {outcome.expected}, proposed {shown}")
    if docs:
        rewrite_block(block, name=name)


def model_option(description: str) -> argparse.Namespace:
    """The embedded model a proposals bench runs on (the default unless --model), and --no-docs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    parser.add_argument("--every", type=int, default=1, help="a subset: every Nth labelled line (1: all)")
    return parser.parse_args()
