"""Figures from interleaved runs (ours, theirs, ours, theirs...): the median of the runs and their
spread, never the best. Pure: the engine benchmark feeds it the runs it timed."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    """The median of some runs' figures, with the lowest and the highest of them."""

    median: float
    low: float
    high: float
    runs: int

    def text(self, scale: float = 1.0, unit: str = "") -> str:
        """E.g. "2.10 ms (1.95–2.40 ms, 5 runs)", each figure times `scale`."""
        return (
            f"{self.median * scale:.2f}{unit} ({self.low * scale:.2f}–{self.high * scale:.2f}{unit}, {self.runs} runs)"
        )


def spread(values: Sequence[float]) -> Spread:
    if not values:
        raise ValueError("no runs")
    return Spread(statistics.median(values), min(values), max(values), len(values))


def run_ratios(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Each of our runs over the peer's run beside it in time, so drift on a shared machine hits
    both figures of a ratio alike."""
    if len(ours) != len(theirs) or not ours:
        raise ValueError(f"runs must pair up: {len(ours)} of ours, {len(theirs)} of theirs")
    if min(theirs) <= 0:
        raise ValueError("a peer run took no time")
    return [mine / peer for mine, peer in zip(ours, theirs, strict=True)]


def run_medians(runs: Sequence[Sequence[float]]) -> list[float]:
    """One figure per run: the median of what it timed (a turn, a round)."""
    return [statistics.median(run) for run in runs]
