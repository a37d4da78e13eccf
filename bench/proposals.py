"""What the two proposal benchmarks share (bench/actions.py: built-in actions; bench/mcp_tools.py: MCP
tools): one labelled line's outcome, scored by bench/scorers/actions.py; the table of each part side by
side; and the run itself (read every part's lines first, measure in a scratch directory, print the
block and the misses, and only once every part has finished, rewrite its block of docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lines import PARTS, Part, labelled
from bench.parts import parts_option
from bench.report import rewrite_block
from bench.scorers.actions import NONE, Counts, Proposal, score, total
from graph.actions import ActionCall
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Outcome:
    """One labelled line: what it asked for (`{"action": "none"}` or the action and its arguments),
    every call the model proposed once `check_call` accepted it, and the scorer's counts for them."""

    line: str
    expected: dict[str, Any]
    proposed: tuple[ActionCall, ...]

    @property
    def counts(self) -> Counts:
        return score(self.expected, [Proposal(call.name, call.args) for call in self.proposed])

    @property
    def wanted(self) -> bool:
        return self.expected["action"] != NONE

    @property
    def right(self) -> bool:
        """Nothing to show as a miss: the asked action, exactly, and nothing else (or nothing, on chit-chat)."""
        counts = self.counts
        return counts.fp == 0 and counts.fn == 0 and counts.exact == counts.tp


@dataclass(frozen=True)
class PartRun:
    """One part's run: its outcomes and how long they took."""

    outcomes: list[Outcome]
    seconds: float


def _ratio(count: int, of: int, digits: int = 0) -> str:
    return f"{count}/{of}" + (f" = {count / of:.{digits}%}" if of else "")


def figures(run: PartRun) -> dict[str, str]:
    """The table's rows for one part: precision and recall from the scorer's totals, the lines of
    chit-chat that got a proposal, wrong actions for a request, exact arguments, time per line."""
    outcomes = run.outcomes
    counts = total(o.counts for o in outcomes)
    chat = [o for o in outcomes if not o.wanted]
    wanted = [o for o in outcomes if o.wanted]
    return {
        "precision (proposals that were asked for)": _ratio(counts.tp, counts.tp + counts.fp),
        "recall (requests that became the asked proposal)": _ratio(counts.tp, counts.tp + counts.fn),
        "chit-chat lines that got a proposal": _ratio(sum(o.counts.fp > 0 for o in chat), len(chat), 1),
        "requests that got a wrong action": _ratio(sum(o.counts.fp > 0 for o in wanted), len(wanted)),
        "exact arguments (of the proposals asked for)": _ratio(counts.exact, counts.tp),
        "time per line (action step, and a reply when none)": f"{run.seconds / max(1, len(outcomes)):.2f} s",
    }


def side_by_side(rows: Mapping[Part, Mapping[str, str]], targets: Mapping[str, str] | None = None) -> str:
    """One table, a column per part (dev, held_out), and the targets' column when there are targets."""
    parts = list(rows)
    metrics = list(next(iter(rows.values())))
    head = ["metric", *parts, *(["target"] if targets else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for metric in metrics:
        cells = [metric, *(rows[part].get(metric, "") for part in parts)]
        if targets:
            cells.append(targets.get(metric, ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_action(outcomes: Sequence[Outcome], heading: str = "By action") -> str:
    """Per action asked for: the requests that got that proposal, and how many of those were exact."""
    parts = []
    for name in dict.fromkeys(o.expected["action"] for o in outcomes if o.wanted):
        asked = [o.counts for o in outcomes if o.expected["action"] == name]
        parts.append(f"{name} {sum(c.tp for c in asked)}/{len(asked)} proposed, {sum(c.exact for c in asked)} exact")
    return f"{heading}: " + "; ".join(parts) + "."


Lines = dict[Part, list[dict[str, Any]]]
Measure = Callable[[Path, Lines], Coroutine[Any, Any, dict[Part, PartRun]]]
"""Runs every part's labelled lines in one scratch directory (the model loaded once); each part's run."""
Report = Callable[[dict[Part, PartRun], float], str]
"""(each part's run, the load at the start) -> the block for docs/benchmarks.md."""


def run(measure: Measure, report: Report, name: str, set_name: str, args: argparse.Namespace) -> None:
    """Read the lines of every part asked for (a missing held-out file stops the run before anything
    is measured), measure, print the block and every miss, and rewrite the `name` block of
    docs/benchmarks.md only when every part ran, none cut short by --lines (a subset by --every is
    stated in the block), and not `--no-docs`: a stopped or partial run writes nothing."""
    lines: Lines = {part: labelled(set_name, part)[: args.lines][:: args.every] for part in args.parts}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        runs = asyncio.run(measure(Path(scratch), lines))
    block = report(runs, load)
    print(block)
    for part, part_run in runs.items():
        for outcome in part_run.outcomes:
            if not outcome.right:
                shown = ", ".join(call.describe() for call in outcome.proposed) or "nothing"
                print(f"  {part}: {outcome.line!r}: expected {outcome.expected}, proposed {shown}")
    if args.no_docs or tuple(args.parts) != PARTS or args.lines is not None:
        print(f"(docs/benchmarks.md left as it is: its block takes {' and '.join(PARTS)}, no --lines)")
        return
    rewrite_block(block, name=name)


def add_parts(parser: argparse.ArgumentParser) -> None:
    """--part / --parts: the development lines by default; `make bench` passes --parts dev,held_out."""
    parser.add_argument(
        "--part",
        "--parts",
        dest="parts",
        type=parts_option,
        default=("dev",),
        help="dev (default), held_out, or dev,held_out side by side (make bench; the docs block needs both)",
    )
    parser.add_argument("--lines", type=int, default=None, help="only the first N lines of each part (a smoke)")


def model_option(description: str) -> argparse.Namespace:
    """The embedded model a proposals bench runs on (the default unless --model), --no-docs, the parts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    parser.add_argument("--every", type=int, default=1, help="a subset: every Nth labelled line (1: all)")
    add_parts(parser)
    return parser.parse_args()
