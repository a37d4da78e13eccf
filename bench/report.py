"""The benchmark's table: percentiles, the machine it ran on, and the block of the docs it rewrites."""

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

DOCS = Path(__file__).resolve().parents[1] / "docs"
BENCHMARKS_PAGE = DOCS / "benchmarks.md"
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
    """The commit the figures were measured on (`git rev-parse --short HEAD`), "+changes" when the
    work tree differs from it outside docs/ (where the benchmarks write their blocks, so one run of
    `make bench` after another still names its commit): a figure names the code it measured."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs")
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return f"{head}+changes" if changed else head


def stamp(load: float, runs: int) -> str:
    """What every block opens with: machine, date and load, the commit, and how many runs the figures
    are from."""
    return f"Machine: {machine(load)}. Commit {commit()}, {runs} run{'s' if runs != 1 else ''}."


def table(rows: Sequence[Row], seconds: float, load: float) -> str:
    lines = [
        f"Machine: {machine(load)}. The engine benchmark took {seconds:.0f} s.",
        "",
        "| metric | measured | target | ratio | result |",
        "| --- | --- | --- | --- | --- |",
        *("| " + " | ".join(row.cells()) + " |" for row in rows),
    ]
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    return (START, END) if name == "engine" else (f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->")


def block_page(name: str, docs: Path = DOCS) -> Path:
    """The one docs page that holds the `name` block: most are on benchmarks.md, a long example (a task's
    transcript) sits on its feature's page so that benchmarks.md stays a short reference."""
    start = markers(name)[0]
    holding = [p for p in sorted(docs.rglob("*.md")) if start in p.read_text(encoding="utf-8").splitlines()]
    if len(holding) != 1:
        raise RuntimeError(f"{docs}: {len(holding)} pages hold a {start} block, not one")
    return holding[0]


def rewrite_block(block: str, name: str = "engine", page: Path | None = None) -> None:
    """Replace what stands between the `name` benchmark's markers in `page` (by default the docs page
    holding them) with `block`."""
    start, end = markers(name)
    page = page or block_page(name)
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise RuntimeError(f"{page}: no {start} ... {end} block to rewrite")
    page.write_text(pattern.sub(lambda _: f"{start}\n{block}\n{end}", text, count=1), encoding="utf-8")
