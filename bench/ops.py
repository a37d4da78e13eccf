"""The operator's view, measured: per-turn overhead with the ops endpoints served and scraped and
every model call watched (timed, counted, its tokens stored), side by side in one run with the same
app without them. Target: at most 5% more turn overhead. The counters themselves (messages, rounds,
turns) are always on, in both.

Prints one table and writes it into docs/benchmarks.md between the bench:ops markers.
Run from the repository root: python bench/ops.py [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.harness import MODERATOR, BenchApp, BenchModels, bench_app  # noqa: E402
from bench.phases import MODERATED, CallTally, moderated_round  # noqa: E402
from bench.report import Row, commit, median, percentile, rewrite_block, table  # noqa: E402
from bot.ops import serving_ops  # noqa: E402
from graph.models.base import ChatRunnable  # noqa: E402
from graph.observe import ModelCall, ModelCallWatcher  # noqa: E402
from tests.fake_models import CallbackChatModel  # noqa: E402

TARGET = 0.05  # the most extra turn overhead the operator's view may cost


USAGE = {"input_tokens": 400, "output_tokens": 30, "total_tokens": 430}


class UsageBenchModels(BenchModels):
    """BenchModels whose replies carry usage metadata, as a provider's do (in both apps alike)."""

    def _timed(self, model: ChatRunnable) -> ChatRunnable:
        timed = super()._timed(model)
        assert isinstance(timed, CallbackChatModel)
        inner = timed.reply

        async def reply(speaker: str, messages: list[BaseMessage]) -> Any:
            answer = await inner(speaker, messages)
            text = answer.text if isinstance(answer, AIMessage) else str(answer)
            return AIMessage(content=text, usage_metadata=USAGE)

        return CallbackChatModel(speaker=timed.speaker, reply=reply)


class WatchedBenchModels(UsageBenchModels):
    """The same models, each wrapped by the model-call watcher as ChatModels' are: its work runs
    outside the timed reply, so it counts as the engine's."""

    watcher: ModelCallWatcher | None = None

    def _timed(self, model: ChatRunnable) -> ChatRunnable:
        timed = super()._timed(model)
        assert isinstance(timed, CallbackChatModel) and self.watcher is not None
        if timed.speaker == MODERATOR:
            return self.watcher.watched(timed, "bench-model", "moderator")
        return self.watcher.watched(timed, "bench-model", "persona", timed.speaker)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SCRAPER = """
import sys, time, urllib.request
url, interval = sys.argv[1], float(sys.argv[2])
while True:
    for path in ("/metrics", "/readyz", "/healthz"):
        with urllib.request.urlopen(url + path, timeout=10) as response:
            response.read()
    print("scraped", flush=True)
    time.sleep(interval)
"""


async def scraper(url: str, interval: float) -> asyncio.subprocess.Process:
    """What Prometheus and an orchestrator's probes do, every `interval` seconds, from another process
    as they would: only the serving side's cost falls on the bot's event loop."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", SCRAPER, url, str(interval), stdout=asyncio.subprocess.PIPE
    )


async def measure(args: argparse.Namespace) -> tuple[list[float], list[float], int, int]:
    watched_models = WatchedBenchModels()
    plain: list[float] = []
    watched: list[float] = []
    recorded = 0
    async with bench_app(UsageBenchModels(), MODERATED) as off, bench_app(watched_models, MODERATED) as on:
        book = on.app.service.tokens
        assert book is not None

        async def record(call: ModelCall) -> None:
            nonlocal recorded
            recorded += 1
            await book.record(call)

        watched_models.watcher = ModelCallWatcher("bench", record)
        async with serving_ops(on.app.db, on.app.readiness, "127.0.0.1", free_port()) as url:
            assert url is not None
            scraping = await scraper(url, args.scrape_interval)
            try:
                await rounds(off, on, range(args.warmup), None, None)
                for block in range(args.blocks):
                    start = args.warmup + block * args.block_rounds
                    await rounds(off, on, range(start, start + args.block_rounds), plain, watched, block % 2 == 0)
            finally:
                scraping.terminate()
                output, _ = await scraping.communicate()
    return plain, watched, output.decode().count("scraped"), recorded


async def rounds(
    off: BenchApp,
    on: BenchApp,
    numbers: range,
    plain: list[float] | None,
    watched: list[float] | None,
    first_off: bool = True,
) -> None:
    """The same rounds in both apps, one block each, so drift hits both alike; blocks alternate who
    goes first, so the order favours neither."""
    tally = CallTally()
    for app, key, into in ((off, "console:ops-off", plain), (on, "console:ops-on", watched))[:: 1 if first_off else -1]:
        for number in numbers:
            turns = await moderated_round(app, key, number, tally)
            if into is not None:
                into.extend(turns)


def rows(
    plain: Sequence[float], watched: Sequence[float], scrapes: int, calls: int, args: argparse.Namespace
) -> list[Row]:
    off, on = median(plain), median(watched)
    extra = (on - off) / off
    return [
        Row(
            "persona turn overhead without the operator's view (moderated, zero-latency model)",
            f"median {off * 1e3:.2f} ms, p99 {percentile(plain, 0.99) * 1e3:.2f} ms ({len(plain)} turns)",
            "(the baseline)",
            1.0,
            True,
        ),
        Row(
            f"the same with /metrics, /readyz and /healthz scraped every {args.scrape_interval:g} s "
            "and every model call watched (timed, counted, tokens stored)",
            f"median {on * 1e3:.2f} ms, p99 {percentile(watched, 0.99) * 1e3:.2f} ms ({len(watched)} turns, "
            f"{scrapes} scrapes, {calls} model calls watched); {extra * 100:+.1f}%",
            f"≤ +{TARGET * 100:.0f}%",
            max(extra, 0.0) / TARGET,
            extra <= TARGET,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=1000, help="alternating blocks of rounds for each app")
    parser.add_argument(
        "--block-rounds", type=int, default=1, help="measured rounds per block (1: the apps alternate every round)"
    )
    parser.add_argument("--warmup", type=int, default=10, help="rounds per app before measuring")
    parser.add_argument(
        "--scrape-interval",
        type=float,
        default=1.0,
        help="seconds between scrapes: far more often than Prometheus (every 15 to 60 s) or a probe (10 s) would",
    )
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print the table only")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    load, start = os.getloadavg()[0], time.perf_counter()
    plain, watched, scrapes, calls = asyncio.run(measure(args))
    block = table(rows(plain, watched, scrapes, calls, args), time.perf_counter() - start, load).replace(
        "The engine benchmark", "The ops benchmark"
    )
    block += f"\n\nCommit {commit()}, 1 run of {args.blocks} alternating blocks."
    print(block)
    if not args.no_docs:
        rewrite_block(block, "ops")


if __name__ == "__main__":
    main()
