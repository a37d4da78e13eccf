"""A new user's very first message: how often the embedded default model's first turn in a new
channel succeeds, through the whole app (console port, default config, local provider), over 50 channels.

Run from the repository root: python bench/first_turn.py [--channels N] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402

OPENERS = (
    "Hello Nova, what should we launch next?",
    "hi everyone!",
    "Sage, what do you think about remote work?",
    "Rex, convince me that tabs beat spaces.",
    "What's a good name for a coffee shop?",
)
TARGET = 49 / 50


async def first_turns(channels: int, data_dir: Path) -> tuple[int, list[str]]:
    config = default_config(data_dir, ROOT / "personas", **{'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"'})
    transcript: list[str] = []
    async with open_app(config, ConsolePort(transcript.append), environ={}) as app:
        succeeded = 0
        failures: list[str] = []
        for number in range(channels):
            key = f"console:first-turn-{number}"
            opener = OPENERS[number % len(OPENERS)]
            before = len(transcript)
            await app.service.handle(Inbound(key, "u1", "Ana", opener, event_id=f"first-{number}"))
            await app.service.wait_idle(key)
            said = transcript[before:]
            if said and not said[0].startswith("[system]"):
                succeeded += 1
            else:
                failures.append(f"{opener!r} -> {said}")
    return succeeded, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        succeeded, failures = asyncio.run(first_turns(args.channels, Path(scratch)))
    seconds = time.perf_counter() - started
    rate = succeeded / args.channels
    block = "\n".join(
        [
            f"Machine: {machine(load)}. {args.channels} new console channels, default config, embedded {LOCAL_MODELS[DEFAULT_LOCAL_MODEL].title}, {seconds:.0f} s.",
            "",
            "| metric | measured | target |",
            "| --- | --- | --- |",
            f"| first turn answered in a new channel | {succeeded}/{args.channels} = {rate:.0%} | ≥ 49/50 ({'met' if rate >= TARGET else 'missed'}) |",
        ]
    )
    print(block)
    for failure in failures:
        print("  failed:", failure)
    if not args.no_docs:
        rewrite_block(block, name="first-turn")


if __name__ == "__main__":
    main()
