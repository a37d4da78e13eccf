"""The embedded moderator: do moderated rounds on the embedded default model end with FINISH before max_turns, with
reasons people can read? Runs the whole app (console port, default config with moderation on, the
local provider) over varied human lines, and rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/moderator.py [--rounds N] [--no-docs]
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
from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app, provider_config  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.base import ChatRunnable, Models  # noqa: E402
from graph.models.factory import build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.moderator import fixed_reasons  # noqa: E402
from graph.routing import FINISH, ROUND_IS_FULL, Speaker, addressed  # noqa: E402
from personas import Persona  # noqa: E402

# A third of the lines address nobody, a third one persona, a third two.
LINES = (
    "What should we launch next quarter?",
    "Rex, convince me that tabs beat spaces.",
    "Nova and Rex, argue about the marketing budget.",
    "hi everyone!",
    "Sage, what do you think about four-day weeks?",
    "Sage, then Nova: which city for the team offsite?",
    "Is remote work here to stay?",
    "Nova, give me a wild idea for the launch party.",
    "Rex and Sage, should we raise prices?",
    "Pick a name for our coffee shop.",
    "Rex, what is wrong with our onboarding?",
    "Nova, Sage: how do we get our first thousand users?",
    "How do we cut costs without layoffs?",
    "Sage, how should I prepare for a hard conversation with my manager?",
    "Rex, then Nova: is a mobile app worth it for us?",
    "Should we rewrite the backend in Rust?",
    "Nova, what would make our newsletter fun to read?",
    "Sage and Rex, what do we do about the missed deadline?",
)
TARGET_FINISHED = 0.80
_DECISION = re.compile(r"^\[moderator\] next: (\S+) \((.*)\)$")


@dataclass(frozen=True)
class Round:
    line: str
    addressed: list[str]  # display names, in mention order
    picks: list[tuple[str, str]]  # (next speaker or FINISH, reason as shown)
    model_calls: int
    seconds: float

    @property
    def turns(self) -> int:
        return sum(1 for pick, _ in self.picks if pick != FINISH)

    @property
    def finished(self) -> bool:
        return bool(self.picks) and self.picks[-1][0] == FINISH

    @property
    def forced_finish(self) -> bool:
        return self.finished and self.picks[-1][1] == ROUND_IS_FULL

    @property
    def addressed_first(self) -> bool:
        return [pick for pick, _ in self.picks[: len(self.addressed)]] == self.addressed


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


async def run_rounds(rounds: int, data_dir: Path) -> tuple[list[Round], int]:
    config_text = (ROOT / "config.toml").read_text(encoding="utf-8")
    config_text = config_text.replace('data_dir = "data"', f'data_dir = "{data_dir / "data"}"')
    config_text = config_text.replace('personas_dir = "personas"', f'personas_dir = "{ROOT / "personas"}"')
    config_text = config_text.replace('cache_dir = ""', f'cache_dir = "{MODELS_DIR}"')
    config_text = re.sub(r"(\[moderation\][^\[]*?)enabled = false", r"\1enabled = true", config_text, count=1)
    config_path = data_dir / "config.toml"
    config_path.write_text(config_text, encoding="utf-8")
    config = load_config(config_path)
    models = CountingModels(build_models(provider_config(config), {}))
    transcript: list[str] = []
    results: list[Round] = []
    async with open_app(config, ConsolePort(transcript.append, verbose=True), models=models, environ={}) as app:
        present = [app.personas[i] for i in config.settings.bot.participants]
        speakers = [Speaker(p.id, p.display_name, p.talkativeness) for p in present]
        names = {p.id: p.display_name for p in present}
        for number in range(rounds):
            # Six rounds a channel: some history to weigh, but prompts that stay short.
            key = f"console:moderator-{number // 6}"
            line = LINES[number % len(LINES)]
            before, calls_before, started = len(transcript), models.moderator_calls, time.perf_counter()
            await app.service.handle(Inbound(key, "u1", "Ana", line, event_id=f"moderator-{number}"))
            await app.service.wait_idle(key)
            decisions = [m.groups() for m in map(_DECISION.match, transcript[before:]) if m]
            results.append(
                Round(
                    line=line,
                    addressed=[names[i] for i in addressed(line, [], speakers)],
                    picks=[(pick, reason) for pick, reason in decisions],
                    model_calls=models.moderator_calls - calls_before,
                    seconds=time.perf_counter() - started,
                )
            )
        max_turns = config.settings.moderation.max_turns
    return results, max_turns


def report(results: list[Round], max_turns: int, seconds: float, load: float) -> str:
    finished_early = [r for r in results if r.finished and r.turns < max_turns]
    forced = sum(r.forced_finish for r in finished_early)
    readable = fixed_reasons(["Nova", "Sage", "Rex"])
    decisions = [reason for r in results for _, reason in r.picks]
    unreadable = [reason for reason in decisions if reason not in readable]
    addressed_rounds = [r for r in results if r.addressed]
    rate = len(finished_early) / len(results)

    def median_turns(rounds: list[Round]) -> str:
        return f"{statistics.median(r.turns for r in rounds):g}" if rounds else "-"

    by_addressed = ", ".join(
        f"{label} {median_turns([r for r in results if len(r.addressed) == count])}"
        for count, label in ((0, "nobody addressed"), (1, "one addressed"), (2, "two addressed"))
    )
    calls = sum(r.model_calls for r in results)
    lines = [
        f"Machine: {machine(load)}. {len(results)} moderated rounds, six to a new console channel"
        f" (Nova, Sage and Rex, max_turns {max_turns}, default config), embedded {LOCAL_MODELS[DEFAULT_LOCAL_MODEL].title}, {seconds:.0f} s.",
        "",
        "| metric | measured | target |",
        "| --- | --- | --- |",
        f"| rounds that end with FINISH before max_turns | {len(finished_early)}/{len(results)} = {rate:.0%} "
        f"({len(finished_early) - forced} chosen by the model, {forced} forced after the follow-up turns) "
        f"| ≥ 80% ({'met' if rate >= TARGET_FINISHED else 'missed'}) |",
        f"| unreadable reasons (not from the fixed set or a template) | {len(unreadable)} of {len(decisions)} decisions "
        f"| 0 ({'met' if not unreadable else 'missed'}) |",
        f"| persona turns per round | median {median_turns(results)} ({by_addressed}) |  |",
        f"| addressed personas first, in mention order | {sum(r.addressed_first for r in addressed_rounds)}/{len(addressed_rounds)} rounds |  |",
        f"| decisions the model was asked for | {calls} of {len(decisions)} ({calls / len(results):.1f} a round) |  |",
        f"| time per round | median {statistics.median(r.seconds for r in results):.1f} s |  |",
    ]
    return "\n".join(lines) + ("\n\nUnreadable: " + "; ".join(unreadable[:5]) if unreadable else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=36)
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print the table only")
    parser.add_argument("--verbose", action="store_true", help="print every round's decisions")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        results, max_turns = asyncio.run(run_rounds(args.rounds, Path(scratch)))
    block = report(results, max_turns, time.perf_counter() - started, load)
    if args.verbose:
        for r in results:
            print(f"{r.line!r}: " + " -> ".join(f"{pick} ({reason})" for pick, reason in r.picks))
    print(block)
    if not args.no_docs:
        rewrite_block(block, name="moderator")


if __name__ == "__main__":
    main()
