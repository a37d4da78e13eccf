"""Recall with memory on and off, on the embedded default (Qwen2.5-Coder-1.5B-Instruct, default
config): 20 facts, each stated once early in a long conversation, then asked about after 200+ other
lines; and the seconds one summary update (graph/memory.py) takes.

The conversation is stored line by line as the app stores it (a person's line, then a persona's), so
the benchmark spends its time on what it measures: the summary updates, written by the model through
the real memory keeper, and one answer per question from the persona's real prompt (`roundtable
prompt`'s) with the question appended. An answer recalls a fact when it holds the fact's key word as
a whole word (a plural or possessive counts: "peanuts", "Luigi's"). Memory off is the same
conversation with `[memory] summaries = false`.

Run from the repository root: python bench/memory.py [--facts N] [--filler N] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import HumanMessage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.command_values import ListPersonas  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from storage import history, memory  # noqa: E402
from storage.records import LineKind  # noqa: E402

KEY = "console:memory-bench"
PERSONA = "sage"
FACTS = (  # (what Ana says early, the question asked later, the word an answer must hold)
    ("The boat is called Marigold.", "What is the boat called?", "marigold"),
    ("Our office cat is named Pepper.", "What is the office cat named?", "pepper"),
    ("The launch is on a Thursday.", "Which day is the launch?", "thursday"),
    ("The client is based in Lisbon.", "Where is the client based?", "lisbon"),
    ("The budget is 40 thousand euros.", "How big is the budget, in thousands of euros?", "40"),
    ("Bo is allergic to peanuts.", "What is Bo allergic to?", "peanut"),
    ("The wifi password is tangerine.", "What is the wifi password?", "tangerine"),
    ("The new logo is green.", "What colour is the new logo?", "green"),
    ("Our server runs in Frankfurt.", "Where does our server run?", "frankfurt"),
    ("The team dinner is at Luigi's.", "Where is the team dinner?", "luigi"),
    ("Mia's favourite tea is jasmine.", "What is Mia's favourite tea?", "jasmine"),
    ("The project code name is Falcon.", "What is the project code name?", "falcon"),
    ("The retro is every Friday.", "When is the retro?", "friday"),
    ("The printer is on the third floor.", "Which floor is the printer on?", "third"),
    ("Leo drives a red van.", "What colour is Leo's van?", "red"),
    ("The demo uses a violin recording.", "Which instrument is in the demo recording?", "violin"),
    ("Our mascot is an owl.", "What animal is our mascot?", "owl"),
    ("The deadline moved to March.", "Which month is the deadline?", "march"),
    ("The meeting room is called Aurora.", "What is the meeting room called?", "aurora"),
    ("Zoe speaks Portuguese.", "Which language does Zoe speak?", "portuguese"),
)
FILLER = (  # the weekly chat that follows, a person's line then Sage's: no fact's key word in it
    "Ana: Let us keep going with the weekly notes.",
    "Sage: Agreed, one thing at a time and calmly.",
    "Ana: Has anyone looked at the open tickets today?",
    "Sage: I skimmed them; nothing urgent stands out.",
    "Ana: Good, then we can tidy the backlog a little.",
    "Sage: Yes, small steps keep the list honest.",
    "Ana: I will write up the minutes afterwards.",
    "Sage: Thank you, that helps everyone catch up.",
    "Ana: Anything else before we move on?",
    "Sage: Nothing from me, let us continue.",
)


def recalls(answer: str, word: str) -> bool:
    """The rule: the key word as a whole word of the answer, or its plural or possessive."""
    return re.search(rf"\b{re.escape(word)}(s|'s|’s)?\b", answer.casefold()) is not None


async def run(
    facts: Sequence[tuple[str, str, str]], filler_lines: int, data_dir: Path, memory_on: bool
) -> tuple[int, list[float], int]:
    """(facts recalled, seconds per summary update, lines in the conversation before the questions)."""
    scratch = data_dir / ("on" if memory_on else "off")
    scratch.mkdir()
    config = default_config(
        scratch,
        ROOT / "personas",
        **{
            'participants = ["nova", "sage", "rex"]': 'participants = ["sage"]',
            'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"',
            "summaries = true": f"summaries = {'true' if memory_on else 'false'}",
        },
    )
    label = "memory on" if memory_on else "memory off"
    async with open_app(config, ConsolePort(lambda _: None), environ={}) as app:
        await app.service.run_command(KEY, ListPersonas())  # the channel, with Sage alone in it
        db, persona = app.db, app.personas[PERSONA]
        for fact, _, _ in facts:
            await history.append_line(db, KEY, LineKind.HUMAN, "ana", "Ana", f"Sage, for the record: {fact}")
        for number in range(filler_lines):
            author, text = FILLER[number % len(FILLER)].split(": ", 1)
            kind = LineKind.HUMAN if author == "Ana" else LineKind.PERSONA
            await history.append_line(db, KEY, kind, author.lower(), author, text)
        seconds: list[float] = []
        if memory_on:
            started = time.perf_counter()
            updates = await app.engine.memory.update(KEY, persona)  # each folds up to 60 lines in
            seconds = [(time.perf_counter() - started) / updates] * updates if updates else []
            summary = await memory.summary(db, KEY, PERSONA)
            print(f"{label}: {updates} summary updates; summary:", summary.text if summary else "(none)", flush=True)
        prompt = await app.engine.prompt_for(KEY, PERSONA)
        window = [message for message in prompt if message.id and message.id.startswith("line-")]
        shown = " ".join(str(message.content) for message in window).casefold()
        in_window = [word for fact, _, word in facts if fact.casefold() in shown]
        print(
            f"{label}: {len(window)} lines in the window; facts still in its window: {in_window or 'none'}", flush=True
        )
        recalled = 0
        model = app.models.persona_model(persona, ["Ana"])
        for _, question, word in facts:
            reply = await model.ainvoke([*prompt, HumanMessage(content=f"Ana: Sage, {question}")])
            answer = " ".join(str(reply.content).split())
            hit = recalls(answer, word)
            recalled += hit
            print(f"{label}: {'RECALLED' if hit else 'missed  '} {word!r} <- {question} -> {answer!r}", flush=True)
        return recalled, seconds, len(facts) + filler_lines


def ratio(recalled: int | None, asked: int) -> str:
    return "not run" if recalled is None else f"{recalled}/{asked}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=len(FACTS), help=f"facts stated (at most {len(FACTS)})")
    parser.add_argument("--filler", type=int, default=220, help="lines between the facts and the questions")
    parser.add_argument("--no-docs", action="store_true", help="print the figures, leave docs/benchmarks.md alone")
    parser.add_argument(
        "--memory", choices=("both", "on", "off"), default="both", help="one side alone leaves the docs alone"
    )
    args = parser.parse_args()
    facts = FACTS[: args.facts]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        on = off = None
        seconds: list[float] = []
        if args.memory != "off":
            on, seconds, _ = asyncio.run(run(facts, args.filler, Path(scratch), memory_on=True))
        if args.memory != "on":
            off, _, _ = asyncio.run(run(facts, args.filler, Path(scratch), memory_on=False))
    took = time.perf_counter() - started
    per_update = sum(seconds) / len(seconds) if seconds else 0.0
    block = "\n".join(
        [
            f"Machine: {machine(load)}. Default config, embedded Qwen2.5-Coder-1.5B-Instruct; {len(facts)} facts "
            f"stated once, then {args.filler} other lines ({len(facts) + args.filler} in all), then one question per fact to Sage; "
            f"{took:.0f} s.",
            "",
            "| metric | memory on | memory off |",
            "| --- | --- | --- |",
            f"| facts recalled | {ratio(on, len(facts))} | {ratio(off, len(facts))} |",
            f"| summary updates | {len(seconds)}, {per_update:.1f} s each on average | none |",
        ]
    )
    print(block)
    if not args.no_docs and args.memory == "both":
        rewrite_block(block, name="memory")


if __name__ == "__main__":
    main()
