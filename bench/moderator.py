"""The embedded moderator: do moderated rounds on the embedded default model end with FINISH within
max_turns, with the personas a line names speaking first, in the order named, and reasons people can read?
Runs the whole app (console port, default config with moderation on, the local provider) over the labelled
lines of bench/lines/{dev,held_out}/moderator.jsonl; bench/scorers/moderator.py decides each round. After a
finished run it rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/moderator.py [--parts dev,held_out] [--runs N] [--rounds N]
[--no-docs] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR  # noqa: E402
from bench.lines import Part  # noqa: E402
from bench.parts import add_arguments, heading, load_parts, share, side_by_side, spread  # noqa: E402
from bench.report import rewrite_block  # noqa: E402
from bench.scorers.moderator import RoundScore, score_round  # noqa: E402
from bot.app import open_app, provider_config  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.base import ChatRunnable, Models  # noqa: E402
from graph.models.factory import build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from personas import Persona  # noqa: E402

TARGET_FINISHED = 0.80
_DECISION = re.compile(r"^\[moderator\] next: (\S+) \((.*)\)$")
_POST = re.compile(r"^\[([^\]\n]{1,40})\] ")


@dataclass(frozen=True)
class Round:
    line: str
    score: RoundScore
    picks: list[tuple[str, str]]
    addressed: int
    model_calls: int
    seconds: float


class CountingModels:
    """The local provider's models, counting the moderator decisions it is asked for."""

    def __init__(self, inner: Models) -> None:
        self.inner = inner
        self.description = inner.description
        self.moderator_calls = 0

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        return self.inner.persona_model(persona, other_names, addressed=addressed)

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        self.moderator_calls += 1
        return self.inner.moderator_model(choices)

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        return self.inner.summary_model(schema, max_tokens)


def moderated_config(data_dir: Path) -> Any:
    config_text = (ROOT / "config.toml").read_text(encoding="utf-8")
    config_text = config_text.replace('data_dir = "data"', f'data_dir = "{data_dir / "data"}"')
    config_text = config_text.replace('personas_dir = "personas"', f'personas_dir = "{ROOT / "personas"}"')
    config_text = config_text.replace('cache_dir = ""', f'cache_dir = "{MODELS_DIR}"')
    config_text = re.sub(r"(\[moderation\][^\[]*?)enabled = false", r"\1enabled = true", config_text, count=1)
    config_path = data_dir / "config.toml"
    config_path.write_text(config_text, encoding="utf-8")
    return load_config(config_path)


async def run_all(
    parts: dict[Part, list[dict[str, Any]]], rounds: int, runs: int, data_dir: Path
) -> tuple[dict[Part, list[list[Round]]], int]:
    """Every part's rounds, `runs` times, the parts interleaved so that they share the machine's load alike."""
    config = moderated_config(data_dir)
    models = CountingModels(build_models(provider_config(config), {}))
    transcript: list[str] = []
    played: dict[Part, list[list[Round]]] = {part: [] for part in parts}
    # CountingModels is the Models protocol in all but name; the app only calls what it forwards.
    port = ConsolePort(transcript.append, verbose=True)
    async with open_app(config, port, models=models, environ={}) as app:  # type: ignore[arg-type]
        ids = {app.personas[i].display_name: i for i in config.settings.bot.participants}
        max_turns = config.settings.moderation.max_turns
        for run in range(runs):
            for part, lines in parts.items():
                results: list[Round] = []
                for number in range(rounds or len(lines)):
                    # Six rounds a channel: some history to weigh, but prompts that stay short.
                    key = f"console:moderator-{part}-{run}-{number // 6}"
                    line = lines[number % len(lines)]
                    before, calls_before, started = len(transcript), models.moderator_calls, time.perf_counter()
                    event = f"moderator-{part}-{run}-{number}"
                    await app.service.handle(Inbound(key, "u1", "Ana", line["text"], event_id=event))
                    await app.service.wait_idle(key)
                    shown = transcript[before:]
                    decisions = [(str(m.group(1)), str(m.group(2))) for m in map(_DECISION.match, shown) if m]
                    picks = [(ids.get(pick, pick), reason) for pick, reason in decisions]
                    posted = [ids[m.group(1)] for m in map(_POST.match, shown) if m and m.group(1) in ids]
                    notices = [s for s in shown if s.startswith("[system]")]
                    score = score_round(posted, picks, line["addressed"], max_turns, notices)
                    calls = models.moderator_calls - calls_before
                    seconds = time.perf_counter() - started
                    results.append(Round(line["text"], score, decisions, len(line["addressed"]), calls, seconds))
                played[part].append(results)
    return played, max_turns


def part_cells(runs: list[list[Round]]) -> list[str]:
    """One part's column: each figure as the median and spread over its runs."""
    finished = [(sum(r.score.finished for r in rs), len(rs)) for rs in runs]
    forced = [(sum(r.score.forced for r in rs), len(rs)) for rs in runs]
    first = [
        (sum(bool(r.score.addressed_first) for r in rs if r.addressed), sum(1 for r in rs if r.addressed))
        for rs in runs
    ]
    skipped = [(sum(r.score.skipped for r in rs), len(rs)) for rs in runs]
    unreadable = [(sum(len(r.score.unreadable) for r in rs), sum(len(r.picks) for r in rs)) for rs in runs]
    passed = [(sum(r.score.ok for r in rs), len(rs)) for rs in runs]

    def median_of(values: Sequence[float]) -> float:
        return statistics.median(values) if values else 0.0

    def turns(count: int | None) -> list[float]:
        """Each run's median turns in its rounds that named `count` personas (all rounds: None); a run
        without such rounds has no figure."""
        chosen = [[r.score.turns for r in rs if count is None or r.addressed == count] for rs in runs]
        return [median_of(c) for c in chosen if c]

    by_addressed = ", ".join(
        f"{label} {spread(turns(n), digits=0)}" for n, label in ((0, "nobody named"), (1, "one"), (2, "two"))
    )
    return [
        share(finished),
        share(forced),
        share(first),
        share(skipped),
        share(unreadable),
        share(passed),
        f"{spread(turns(None), digits=0)} ({by_addressed})",
        spread([sum(r.model_calls for r in rs) / max(len(rs), 1) for rs in runs]),
        spread([median_of([r.seconds for r in rs]) for rs in runs], " s"),
    ]


def report(played: dict[Part, list[list[Round]]], max_turns: int, runs: int, seconds: float, load: float) -> str:
    columns = {part: part_cells(rs) for part, rs in played.items()}
    finished = {
        part: [sum(r.score.finished for r in rs) / max(len(rs), 1) for rs in runs_] for part, runs_ in played.items()
    }
    met = ", ".join(
        f"{p} {'met' if statistics.median(r) >= TARGET_FINISHED else 'missed'}" for p, r in finished.items()
    )
    metrics = [
        (
            "rounds that end with FINISH within max_turns",
            f"≥ 80% ({met})",
        ),
        ("rounds whose FINISH was forced after the follow-up turns", ""),
        ("rounds whose named personas spoke first, in the order named", "all"),
        ("rounds with a turn skipped (a [system] notice)", "0"),
        ("unreadable reasons, of the decisions shown", "0"),
        ("rounds that pass every check", "all"),
        ("persona turns per round", ""),
        ("decisions the model was asked for, a round", ""),
        ("time per round", ""),
    ]
    rows = [[metric, *(columns[p][i] for p in played), target] for i, (metric, target) in enumerate(metrics)]
    sizes = ", ".join(f"{p} {len(rs[0])} rounds" for p, rs in played.items())
    lines = [
        heading(load, runs, sizes, seconds)
        + f" Six rounds to a new console channel (Nova, Sage and Rex, max_turns {max_turns}, default config),"
        f" embedded {LOCAL_MODELS[DEFAULT_LOCAL_MODEL].title}.",
        "",
        *side_by_side(["metric", *played, "target"], rows),
    ]
    unreadable = [reason for rs in played.values() for rounds in rs for r in rounds for reason in r.score.unreadable]
    return "\n".join(lines) + ("\n\nUnreadable: " + "; ".join(unreadable[:5]) if unreadable else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    parser.add_argument("--rounds", type=int, default=0, help="rounds of each part and run (0: each line once)")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print the table only")
    parser.add_argument("--verbose", action="store_true", help="print every round's decisions")
    args = parser.parse_args()
    parts = load_parts("moderator", args.parts)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        played, max_turns = asyncio.run(run_all(parts, args.rounds, args.runs, Path(scratch)))
    block = report(played, max_turns, args.runs, time.perf_counter() - started, load)
    for part, runs in played.items():
        for rounds in runs:
            for r in rounds:
                if args.verbose or not r.score.ok:
                    print(f"{part} {r.line!r}: " + " -> ".join(f"{pick} ({reason})" for pick, reason in r.picks))
    print(block)
    if not args.no_docs:
        rewrite_block(block, name="moderator")


if __name__ == "__main__":
    main()
