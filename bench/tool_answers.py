"""Does the person who asked get the tool's answer? On the labelled tool-answer lines
(bench/lines/{dev,held_out}/tool_answer.jsonl, the development part unless --part; each asks Rex about a note,
read with the notes server's read-only read_note), through the whole app: the embedded default model, the real
notes server over stdio (tests/mcp_notes_server.py, seeded with the part's notes), one human line per fresh
console channel and nothing else. What the run records (Rex's posts after the line, every call the server
received, the clock lines the turn's prompts carried) is scored by bench/scorers/tool_answers.py: the tool ran
for the line's note, and a post of Rex's holds the whole fact, one that neither the question nor the clock held.
With --parts dev,held_out (make bench) the table, a column per part, goes to docs/benchmarks.md.

Run from the repository root: python bench/tool_answers.py [--part held_out] [--lines N] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.lines import PARTS, Part, labelled  # noqa: E402
from bench.proposals import add_parts, side_by_side  # noqa: E402
from bench.report import rewrite_block, stamp  # noqa: E402
from bench.scorers.tool_answers import ToolCall, Verdict, score  # noqa: E402
from bot.app import open_app, provider_config  # noqa: E402
from bot.config import Config, load_config  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.base import Models  # noqa: E402
from graph.models.factory import build_models  # noqa: E402
from graph.prompt import scene_now  # noqa: E402  # the prompt's own clock line: what the person was told
from tests.conftest import write_config  # noqa: E402
from tests.mcp_setup import NOTES_SERVER, calls_received, personas_with_tools  # noqa: E402
from tests.recording_port import RecordingPort  # noqa: E402

MODEL_CACHE = Path.home() / ".cache" / "roundtable-test"  # the tests' copy of the default GGUF


@dataclass(frozen=True)
class Outcome:
    line: str
    verdict: Verdict
    said: tuple[str, ...]


@dataclass(frozen=True)
class PartRun:
    outcomes: list[Outcome]
    seconds: float


def clock_lines(zone: ZoneInfo, started: datetime, ended: datetime) -> list[str]:
    """Every clock line a prompt could have carried between `started` and `ended` (one a minute)."""
    minute, lines = started.replace(second=0, microsecond=0), []
    while minute <= ended:
        lines.append(scene_now("", minute.astimezone(zone)))
        minute += timedelta(minutes=1)
    return lines


def app_config(work: Path, model: str) -> Config:
    sections: dict[str, dict[str, Any]] = {
        "bot": {"personas_dir": str(personas_with_tools(work / "personas"))},
        "llm": {"provider": "local", "local": {"cache_dir": str(MODEL_CACHE), **({"model": model} if model else {})}},
        "moderation": {"max_turns": 1},
        "limits": {"user_messages_per_minute": 1000, "channel_rounds_per_minute": 1000},
        "mcp": {
            "servers": {
                "notes": {
                    "command": [sys.executable, str(NOTES_SERVER), "stdio"],
                    "env": ["NOTES_SEED", "NOTES_CALL_LOG"],
                    "read_only": ["read_note"],
                }
            }
        },
    }
    return load_config(write_config(work, sections))


async def measure_part(work: Path, config: Config, models: Models, part: Part, rows: list[dict[str, Any]]) -> PartRun:
    """One part in its own app and notes server (seeded with this part's notes only: two parts may
    hold a note of the same title), the model shared."""
    seed, log = work / f"notes-{part}.json", work / f"calls-{part}.jsonl"
    seed.write_text(json.dumps({row["note"]: row["content"] for row in rows}), encoding="utf-8")
    os.environ.update(NOTES_SEED=str(seed), NOTES_CALL_LOG=str(log))  # read when the app starts the server
    port = RecordingPort()
    outcomes: list[Outcome] = []
    async with open_app(config, port, models=models, environ={}) as app:
        for _ in range(1200):  # a loaded machine may take a while to start the server
            if app.mcp is None or await app.mcp.not_ready("notes") is None:
                break
            await asyncio.sleep(0.1)
        zone, started = ZoneInfo(config.settings.bot.timezone), time.perf_counter()
        for number, row in enumerate(rows):
            key = f"console:tool-answer-{part}-{number}"
            before_posts, before_calls = len(port.posts), len(calls_received(log))
            began = datetime.now(zone)
            await app.service.handle(
                Inbound(key, f"u{number}", row["author"], row["text"], event_id=f"ta-{part}-{number}")
            )
            await app.service.wait_idle(key)
            clock = clock_lines(zone, began, datetime.now(zone))
            said = tuple(text for channel, persona, text, _ in port.posts[before_posts:] if persona == "rex")
            calls = [ToolCall(f"notes.{c['tool']}", c["args"]) for c in calls_received(log)[before_calls:]]
            outcomes.append(Outcome(row["text"], score(row, said, calls, clock), said))
        return PartRun(outcomes, time.perf_counter() - started)


async def measure(work: Path, lines: dict[Part, list[dict[str, Any]]], model: str) -> tuple[dict[Part, PartRun], str]:
    config = app_config(work, model)
    models = build_models(provider_config(config), {})  # loaded once, for every part
    runs = {part: await measure_part(work, config, models, part, rows) for part, rows in lines.items()}
    return runs, models.description


def _ratio(count: int, of: int) -> str:
    return f"{count}/{of}" + (f" = {count / of:.0%}" if of else "")


def figures(run: PartRun) -> dict[str, str]:
    verdicts = [o.verdict for o in run.outcomes]
    called = [v for v in verdicts if v.called]
    return {
        "the tool was called for the right note": _ratio(len(called), len(verdicts)),
        "answered (the tool ran, a post holds the whole fact)": _ratio(
            sum(v.answered for v in verdicts), len(verdicts)
        ),
        "answered, of the lines whose tool ran": _ratio(sum(v.answered for v in called), len(called)),
        "the fact stated with no call for the note": str(sum(v.stated and not v.called for v in verdicts)),
        "lines the question or clock gave away (not scored)": str(sum(v.given for v in verdicts)),
        "time per line (whole turn)": f"{run.seconds / max(1, len(run.outcomes)):.2f} s",
    }


def report(runs: dict[Part, PartRun], described: str, load: float) -> str:
    sizes = "; ".join(f"{part}: {len(run.outcomes)} lines, {run.seconds:.0f} s" for part, run in runs.items())
    return "\n".join(
        [
            f"{stamp(load, 1)} Labelled lines asking Rex about a note (read-only read_note), {described}. {sizes}.",
            "",
            side_by_side({part: figures(run) for part, run in runs.items()}),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_parts(parser)
    parser.add_argument("--limit", dest="lines", type=int, help="the same as --lines")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    parser.add_argument(
        "--model", default="", help="[llm.local] model, e.g. gemma-3-270m (print only); default: the default"
    )
    args = parser.parse_args()
    lines = {part: labelled("tool_answer", part)[: args.lines] for part in args.parts}  # a missing part stops here
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        runs, described = asyncio.run(measure(Path(scratch), lines, args.model))
    block = report(runs, described, load)
    print(block)
    for part, run in runs.items():
        for outcome in run.outcomes:
            if not outcome.verdict.answered:
                v = outcome.verdict
                print(
                    f"  {part}: {outcome.line!r}: tool {'ran' if v.called else 'not called'}, Rex said {outcome.said}"
                )
    if args.no_docs or args.model or args.lines is not None or tuple(args.parts) != PARTS:
        print(
            f"(docs/benchmarks.md left as it is: its block takes {' and '.join(PARTS)}, all lines, the default model)"
        )
        return
    rewrite_block(block, name="tool_answers")


if __name__ == "__main__":
    main()
