"""The engine benchmark: per-turn cost, side by side with AutoGen's SelectorGroupChat like for like
(bench/pairings.py), its growth with history, concurrency, Slack acks, memory and model calls, against
the real app with a fake model. Prints one table; a run that finished writes it into docs/benchmarks.md
between the bench:engine markers, with the commit it measured and its run count.

Run from the repository root: python bench/engine.py [--no-docs]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.interleaved import run_medians, run_ratios, spread  # noqa: E402
from bench.model_double import MODEL_COST  # noqa: E402
from bench.pairings import Comparison, Pairing, comparison_phase  # noqa: E402
from bench.phases import CallTally, growth_phase, load_phase, memory_phase  # noqa: E402
from bench.report import Row, commit, median, percentile, rewrite_block, table  # noqa: E402
from bot.app import run  # noqa: E402

MB = 1024 * 1024
# make bench-quick: every phase end to end in well under a minute; its figures are not the benchmark's.
QUICK = dict(
    runs=2,
    run_rounds=5,
    growth_rounds=10,
    warmup=2,
    stored_lines=1000,
    channels=20,
    probed_runs=1,
    memory_channels=50,
    no_docs=True,
)
SMALL_HISTORY = 100  # stored lines in the growth phase's small channel


@dataclass
class Results:
    turns: Comparison  # Roundtable's and the AutoGen peer's interleaved runs, in memory and persisted
    growth: dict[int, list[float]]  # the same, by lines stored in the channel beforehand
    burst_seconds: float
    acks: list[float]  # seconds from sending a Slack event until its HTTP 200
    rss_before: float
    rss_after: float
    unmoderated: CallTally
    moderated: CallTally


async def measure(args: argparse.Namespace) -> Results:
    unmoderated, moderated = CallTally(), CallTally()
    rss_before, rss_after = await memory_phase(args.memory_channels, unmoderated)  # first: a fresh heap
    turns = await comparison_phase(args.runs, args.run_rounds, args.warmup, moderated, args.model_cost)
    growth = await growth_phase(args.growth_rounds, args.warmup, (SMALL_HISTORY, args.stored_lines), moderated)
    burst_seconds, acks = await load_phase(args.channels, args.latency, args.probed_runs, unmoderated)
    return Results(turns, growth, burst_seconds, acks, rss_before, rss_after, unmoderated, moderated)


# -- the table: one row per target ------------------------------------------------------------------

TURN_TARGET = 0.0025  # seconds of engine work per persona turn, median


def turn_row(r: Results) -> Row:
    """Our persisted side's rounds, whole (model calls included), per persona turn."""
    turns = [turn for run in r.turns.persisted.ours.runs for turn in run]
    turn = median(turns)
    return Row(
        "persona turn: a moderated round of 3 personas, stored in SQLite files, whole time / 3, "
        f"model double {r.turns.cost * 1e3:g} ms a call",
        f"median {turn * 1e3:.2f} ms, p99 {percentile(turns, 0.99) * 1e3:.2f} ms ({len(turns)} rounds)",
        f"median ≤ {TURN_TARGET * 1e3:g} ms",
        turn / TURN_TARGET,
        turn <= TURN_TARGET,
    )


RATIO_TARGET = 1.0  # like for like, Roundtable's turn costs no more than AutoGen's


def peer_row(r: Results, *, persisted: bool) -> Row:
    """The median of the run pairs' ratios (our run over AutoGen's beside it), with their spread."""
    pairing: Pairing = r.turns.persisted if persisted else r.turns.in_memory
    ours, theirs = run_medians(pairing.ours.runs), run_medians(pairing.theirs.runs)
    ratios = spread(run_ratios(ours, theirs))
    setting = (
        "everything persisted (our SQLite files; AutoGen's team state saved to SQLite, WAL, "
        "synchronous=NORMAL, after every round)"
        if persisted
        else "nothing persisted (our storage in in-memory SQLite; AutoGen's team in memory)"
    )
    rounds = len(pairing.ours.runs[0])
    return Row(
        f"ratio to AutoGen SelectorGroupChat, {setting}: per persona turn, whole round / 3, one model double",
        f"ratio {ratios.text()}; per turn, median of each run's {rounds} rounds: "
        f"Roundtable {spread(ours).text(1e3, ' ms')}, AutoGen {spread(theirs).text(1e3, ' ms')}; "
        f"model calls per round {pairing.ours.calls / pairing.ours.rounds:.2f} vs "
        f"{pairing.theirs.calls / pairing.theirs.rounds:.2f}; AutoGen's histories bounded at "
        f"{r.turns.window} messages, our window's length; {r.turns.warmup} rounds before the runs",
        f"median ratio ≤ {RATIO_TARGET:g}",
        ratios.median,
        ratios.median <= RATIO_TARGET,
    )


def growth_row(r: Results) -> Row:
    small, large = sorted(r.growth)
    low, high = median(r.growth[small]), median(r.growth[large])
    return Row(
        f"growth: median turn overhead with {large:,} vs {small:,} stored lines",
        f"{high * 1e3:.2f} vs {low * 1e3:.2f} ms",
        "ratio ≤ 1.2",
        high / low,
        high / low <= 1.2,
    )


def burst_row(r: Results, args: argparse.Namespace) -> Row:
    return Row(
        f"{args.channels} channels, one message each at once, {args.latency * 1e3:.0f} ms model: all answered",
        f"{r.burst_seconds:.3f} s",
        "≤ 0.8 s",
        r.burst_seconds / 0.8,
        r.burst_seconds <= 0.8,
    )


def ack_row(r: Results, args: argparse.Namespace) -> Row:
    ack = percentile(r.acks, 0.99)
    return Row(
        f"Slack HTTP ack during the {args.channels}-channel load",
        f"p99 {ack * 1e3:.1f} ms, median {median(r.acks) * 1e3:.1f} ms ({len(r.acks)} acks)",
        "p99 ≤ 50 ms",
        ack / 0.05,
        ack <= 0.05,
    )


def memory_row(r: Results, args: argparse.Namespace) -> Row:
    return Row(
        f"RSS after {args.memory_channels:,} channels had one round each",
        f"{r.rss_after / MB:.0f} MB (before them: {r.rss_before / MB:.0f} MB)",
        "≤ 250 MB",
        r.rss_after / MB / 250,
        r.rss_after <= 250 * MB,
    )


def calls_row(r: Results) -> Row:
    off, on = r.unmoderated, r.moderated
    expected = off.replies + on.replies + on.replies
    counted = off.persona_calls + off.moderator_calls + on.persona_calls + on.moderator_calls
    return Row(
        "model calls per message, counted by the fake model",
        f"off: {off.persona_calls / off.replies:.2f} per reply, {off.moderator_calls} moderator; "
        f"on: {on.persona_calls / on.messages:.2f} replies + {on.moderator_calls / on.messages:.2f} moderator "
        f"per message ({off.messages + on.messages:,} messages)",
        "off: 1 per reply; on: replies + replies moderator (none for the last one left, one for FINISH)",
        counted / expected,
        not (off.mismatches or on.mismatches),
    )


def rows(r: Results, args: argparse.Namespace) -> list[Row]:
    return [
        turn_row(r),
        peer_row(r, persisted=False),
        peer_row(r, persisted=True),
        growth_row(r),
        burst_row(r, args),
        ack_row(r, args),
        memory_row(r, args),
        calls_row(r),
    ]


def provenance(args: argparse.Namespace) -> str:
    return (
        f"Commit {commit()}. One run of `python bench/engine.py`: each AutoGen pairing is {args.runs} interleaved "
        f"runs per side of {args.run_rounds} rounds each (ours, theirs, ours, theirs...); its ratio is the median "
        "of the run pairs' ratios, with their lowest and highest."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs of each side in each AutoGen pairing")
    parser.add_argument("--run-rounds", type=int, default=40, help="measured rounds per run")
    parser.add_argument("--model-cost", type=float, default=MODEL_COST, help="seconds each model call costs both sides")
    parser.add_argument("--growth-rounds", type=int, default=100, help="measured rounds per seeded channel")
    parser.add_argument("--warmup", type=int, default=10, help="rounds per channel before measuring")
    parser.add_argument("--stored-lines", type=int, default=100_000, help="lines seeded in the large channel")
    parser.add_argument("--channels", type=int, default=200, help="channels in the concurrency burst")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake model takes in the burst")
    parser.add_argument("--probed-runs", type=int, default=3, help="bursts during which Slack acks are timed")
    parser.add_argument("--memory-channels", type=int, default=1000, help="channels before RSS is read")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print the table only")
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, table printed only: proves every phase still runs (CI)"
    )
    args = parser.parse_args()
    if args.quick:
        args.__dict__.update(QUICK)
    if importlib.util.find_spec("autogen_agentchat") is None:
        parser.exit(2, "the AutoGen peer needs the bench extra: pip install -e '.[bench]' (make bench does this)\n")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    load, start = os.getloadavg()[0], time.perf_counter()
    results = run(measure(args))  # on the bot's own event loop
    block = table(rows(results, args), time.perf_counter() - start, load) + "\n\n" + provenance(args)
    print(block)
    if not args.no_docs:
        rewrite_block(block)


if __name__ == "__main__":
    main()
