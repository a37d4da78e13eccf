"""What a benchmark over labelled lines shares: which parts it runs (dev by default, `--parts dev,held_out`
for both side by side), how many runs, figures as the median and the spread of those runs (never the best),
and the heading of its docs block (date, commit, machine, load, runs, size)."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.lines import PARTS, Part, labelled
from bench.report import commit, machine

ROOT = Path(__file__).resolve().parents[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--parts",
        type=parts_option,
        default=("dev",),
        help=f"comma list of the labelled parts to run: {', '.join(PARTS)}",
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each part; figures are their median and spread")


def parts_option(value: str) -> tuple[Part, ...]:
    """`--parts dev,held_out` as the parts it names, in PARTS order: an unknown or empty one is refused."""
    chosen = tuple(p.strip() for p in value.split(",") if p.strip())
    if not chosen or any(p not in PARTS for p in chosen):
        raise argparse.ArgumentTypeError(f"parts are {', '.join(PARTS)}; got {value!r}")
    return tuple(part for part in PARTS if part in chosen)


def load_parts(name: str, parts: Sequence[Part]) -> dict[Part, list[dict[str, Any]]]:
    """Every chosen part's lines, read before anything runs: a missing part stops the run at once, loudly."""
    try:
        return {part: labelled(name, part) for part in parts}
    except FileNotFoundError as missing:
        raise SystemExit(f"cannot run {name}: {missing}") from missing


def heading(load: float, runs: int, size: str, seconds: float) -> str:
    plural = "run" if runs == 1 else "runs"
    return f"Machine: {machine(load)}. Commit {commit()}. {runs} {plural} of each part, {size}; {seconds:.0f} s in all."


def share(counts: Sequence[tuple[int, int]]) -> str:
    """`count/of = p%` for one run; for several, the median share and the range, with every run's count."""
    rates = [count / of for count, of in counts if of]  # a run with nothing to count has no share
    if len(counts) == 1:
        count, of = counts[0]
        return f"{count}/{of} = {rates[0]:.0%}" if rates else "none to count"
    each = ", ".join(f"{count}/{of}" for count, of in counts)
    if not rates:
        return f"none to count ({each})"
    return f"median {statistics.median(rates):.0%} (range {min(rates):.0%}–{max(rates):.0%}; {each})"


def verdict(target: str, runs: Mapping[Part, Sequence[tuple[int, int]]], met: Callable[[float], bool]) -> str:
    """The target, and per part whether the median of its runs' shares meets it."""
    said = []
    for part, counts in runs.items():
        rates = [count / of for count, of in counts if of]
        said.append(f"{part} {('met' if met(statistics.median(rates)) else 'missed') if rates else 'none to count'}")
    return f"{target} ({', '.join(said)})"


def spread(values: Sequence[float], unit: str = "", digits: int = 1) -> str:
    """One run's value, or the median of several and their range."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}{unit}"
    low, high = min(values), max(values)
    return f"median {statistics.median(values):.{digits}f}{unit} (range {low:.{digits}f}–{high:.{digits}f})"


def side_by_side(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table."""
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head), *("| " + " | ".join(r) + " |" for r in rows)]
