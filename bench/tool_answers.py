"""Does the person who asked get the tool's answer? On the labelled lines of
bench/lines/dev/tool_answer.jsonl (each asks Rex about a note, read with the notes server's read-only
read_note), through the whole app: the embedded default model, the real notes server over stdio
(tests/mcp_notes_server.py, seeded with each line's note), one human line per fresh console channel
and nothing else; the table goes to docs/benchmarks.md. A line counts as answered when a post of Rex's after it holds the note's fact;
the tool counts as called when the server received read_note for that note.

Run from the repository root: python bench/tool_answers.py
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from tests.conftest import write_config  # noqa: E402
from tests.mcp_setup import NOTES_SERVER, calls_received, personas_with_tools  # noqa: E402
from tests.recording_port import RecordingPort  # noqa: E402

LINES = ROOT / "bench" / "lines" / "dev" / "tool_answer.jsonl"
MODEL_CACHE = Path.home() / ".cache" / "roundtable-test"  # the tests' copy of the default GGUF


@dataclass(frozen=True)
class Outcome:
    line: str
    called: bool  # the server received read_note for the line's note
    answered: bool  # a post of Rex's holds the note's fact
    said: tuple[str, ...]


async def measure(work: Path, limit: int, model: str) -> tuple[list[Outcome], str, float]:
    rows = [json.loads(raw) for raw in LINES.read_text(encoding="utf-8").splitlines() if raw.strip()][:limit]
    seed = work / "notes.json"
    seed.write_text(json.dumps({row["note"]: row["content"] for row in rows}), encoding="utf-8")
    log = work / "calls.jsonl"
    os.environ.update(NOTES_SEED=str(seed), NOTES_CALL_LOG=str(log))
    sections = {
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
    config = load_config(write_config(work, sections))
    port = RecordingPort()
    outcomes: list[Outcome] = []
    async with open_app(config, port, environ={}) as app:
        for _ in range(1200):  # a loaded machine may take a while to start the server
            if app.mcp is None or await app.mcp.not_ready("notes") is None:
                break
            await asyncio.sleep(0.1)
        described = app.models.description
        started = time.perf_counter()
        for number, row in enumerate(rows):
            key = f"console:tool-answer-{number}"
            before_posts, before_calls = len(port.posts), len(calls_received(log))
            await app.service.handle(Inbound(key, f"u{number}", row["author"], row["text"], event_id=f"ta-{number}"))
            await app.service.wait_idle(key)
            said = tuple(text for channel, persona, text, _ in port.posts[before_posts:] if persona == "rex")
            calls = calls_received(log)[before_calls:]
            called = any(c["tool"] == "read_note" and c["args"].get("title") == row["note"] for c in calls)
            answered = any(row["answer"].casefold() in text.casefold() for text in said)
            outcomes.append(Outcome(row["text"], called, answered, said))
        seconds = time.perf_counter() - started
    return outcomes, described, seconds


def report(outcomes: list[Outcome], described: str, seconds: float, load: float) -> str:
    total = len(outcomes)
    called = [o for o in outcomes if o.called]
    answered = [o for o in outcomes if o.answered]
    answered_after_call = [o for o in called if o.answered]
    rows = [
        ("the tool was called for the right note", f"{len(called)}/{total} = {len(called) / total:.0%}"),
        ("answered with the tool's result", f"{len(answered)}/{total} = {len(answered) / total:.0%}"),
        (
            "answered, of the lines whose tool ran",
            f"{len(answered_after_call)}/{len(called)}"
            + (f" = {len(answered_after_call) / len(called):.0%}" if called else ""),
        ),
        ("time per line (whole turn)", f"{seconds / total:.2f} s"),
    ]
    return "\n".join(
        [
            f"Machine: {machine(load)}. {total} labelled lines asking Rex about a note (read-only read_note), "
            f"{described}, {seconds:.0f} s.",
            "",
            "| metric | measured |",
            "| --- | --- |",
            *(f"| {a} | {b} |" for a, b in rows),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=1000, help="only the first N lines (a quick look)")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    parser.add_argument(
        "--model", default="", help="[llm.local] model, e.g. gemma-3-270m (print only); default: the default"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        outcomes, described, seconds = asyncio.run(measure(Path(scratch), args.limit, args.model))
    block = report(outcomes, described, seconds, load)
    print(block)
    for outcome in outcomes:
        if not outcome.answered:
            print(f"  {outcome.line!r}: tool {'ran' if outcome.called else 'not called'}, Rex said {outcome.said}")
    every_line = len([raw for raw in LINES.read_text(encoding="utf-8").splitlines() if raw.strip()])
    if len(outcomes) == every_line and not args.no_docs and not args.model:  # the default, on every line
        rewrite_block(block, name="tool_answers")


if __name__ == "__main__":
    main()
