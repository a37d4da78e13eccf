"""The benchmark's table: percentiles, the machine it ran on, and the block of docs/benchmarks.md it rewrites."""

from __future__ import annotations

import math
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START = "<!-- bench:engine:start -->"
END = "<!-- bench:engine:end -->"


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def median(values: Sequence[float]) -> float:
    return percentile(values, 0.5)


@dataclass(frozen=True)
class Row:
    metric: str
    measured: str
    target: str
    ratio: float  # measured / target, or the ratio the target itself is about
    passed: bool

    def cells(self) -> list[str]:
        return [self.metric, self.measured, self.target, f"{self.ratio:.2f}", "pass" if self.passed else "**FAIL**"]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine(load: float) -> str:
    """The CPU, its cores, Python, the date, and how busy the machine was at the start and throughout."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [cpu_model(), f"{os.cpu_count()} cores", f"Python {platform.python_version()}", platform.system(), now]
    # The 15-minute load when the figures are written says whether the run shared the cores throughout.
    busy = f"15-minute load {os.getloadavg()[2]:.2f} at the end"
    return ", ".join([*parts, f"1-minute load {load:.2f} at the start", busy])


def commit() -> str:
    """The short hash of the checked-out commit the figures come from, with "+changes" when the tree differs."""
    root = BENCHMARKS_PAGE.parents[1]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown commit"
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
    )
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


def table(rows: Sequence[Row], seconds: float, load: float) -> str:
    lines = [
        f"Machine: {machine(load)}. The engine benchmark took {seconds:.0f} s.",
        "",
        "| metric | measured | target | ratio | result |",
        "| --- | --- | --- | --- | --- |",
        *("| " + " | ".join(row.cells()) + " |" for row in rows),
    ]
    return "\n".join(lines)


def rewrite_block(block: str, name: str = "engine", page: Path = BENCHMARKS_PAGE) -> None:
    """Replace what stands between the `name` benchmark's markers in `page` with `block`."""
    start, end = (START, END) if name == "engine" else (f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->")
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise RuntimeError(f"{page}: no {start} ... {end} block to rewrite")
    page.write_text(pattern.sub(lambda _: f"{start}\n{block}\n{end}", text, count=1), encoding="utf-8")
