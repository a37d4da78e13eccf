"""A new user's very first message: how often the embedded default model's first turn in a new channel
succeeds, through the whole app (console port, default config, local provider), over new channels that
each get one labelled opener of bench/lines/{dev,held_out}/first_turn.jsonl in turn. bench/scorers/first_turn.py
decides each turn: a reply from a persona the opener could expect, and no machinery notice. After a finished
run it rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/first_turn.py [--parts dev,held_out] [--runs N] [--channels N] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.lines import Part  # noqa: E402
from bench.parts import (  # noqa: E402
    add_arguments,
    heading,
    load_parts,
    share,
    side_by_side,
    spread,
    verdict,
)
from bench.report import rewrite_block  # noqa: E402
from bench.scorers.first_turn import score_first_turn  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402

TARGET = 49 / 50


async def first_turns(
    parts: dict[Part, list[dict[str, Any]]], channels: int, runs: int, data_dir: Path
) -> dict[Part, list[tuple[int, list[float], list[str]]]]:
    """Per part, per run: the first turns that succeeded, each turn's seconds, and what each failure showed.
    The parts are interleaved run by run, so that they share the machine's load alike."""
    config = default_config(data_dir, ROOT / "personas", **{'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"'})
    transcript: list[str] = []
    played: dict[Part, list[tuple[int, list[float], list[str]]]] = {part: [] for part in parts}
    async with open_app(config, ConsolePort(transcript.append), environ={}) as app:
        names = [app.personas[i].display_name for i in config.settings.bot.participants]
        for run in range(runs):
            for part, lines in parts.items():
                succeeded, seconds, failures = 0, [], []
                for number in range(channels or len(lines)):
                    key = f"console:first-turn-{part}-{run}-{number}"
                    opener = lines[number % len(lines)]["text"]
                    before, started = len(transcript), time.perf_counter()
                    await app.service.handle(Inbound(key, "u1", "Ana", opener, event_id=f"first-{part}-{run}-{number}"))
                    await app.service.wait_idle(key)
                    seconds.append(time.perf_counter() - started)
                    turn = score_first_turn(opener, transcript[before:], names)
                    if turn.ok:
                        succeeded += 1
                    else:
                        failures.append(f"{part}: {opener!r}: {turn.why} -> {transcript[before:]}")
                played[part].append((succeeded, seconds, failures))
    return played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    parser.add_argument("--channels", type=int, default=50, help="new channels of each part and run (0: one a line)")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    args = parser.parse_args()
    parts = load_parts("first_turn", args.parts)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        played = asyncio.run(first_turns(parts, args.channels, args.runs, Path(scratch)))
    seconds = time.perf_counter() - started
    counts = {part: [(ok, len(times)) for ok, times, _ in runs] for part, runs in played.items()}
    target = verdict("≥ 98%", counts, lambda rate: rate >= TARGET)
    rows = [
        ["first turn answered by an expected persona, no notice", *(share(c) for c in counts.values()), target],
        ["time per first turn", *(spread([s for run in runs for s in run[1]], " s") for runs in played.values()), ""],
    ]
    sizes = ", ".join(f"{p} {n} new console channels over {len(parts[p])} openers" for p, n in _sizes(counts).items())
    title = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].title
    block = "\n".join(
        [
            heading(load, args.runs, sizes, seconds) + f" Default config, embedded {title}.",
            "",
            *side_by_side(["metric", *played, "target"], rows),
        ]
    )
    print(block)
    for runs in played.values():
        for _, _, failures in runs:
            for failure in failures:
                print("  failed:", failure)
    if not args.no_docs:
        rewrite_block(block, name="first-turn")


def _sizes(counts: dict[Part, list[tuple[int, int]]]) -> dict[Part, int]:
    return {part: c[0][1] for part, c in counts.items()}


if __name__ == "__main__":
    main()
