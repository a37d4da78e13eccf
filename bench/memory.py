"""Recall with memory on and off, on the embedded default (Gemma 3 270M, default config): 20 facts,
each stated once early in a long conversation, then asked about after 200+ other lines; and the
seconds one summary update (graph/memory.py) takes.

The conversation is stored line by line as the app stores it (a person's line, then a persona's), so
the benchmark spends its time on what it measures: the summary updates, and one answer per question
from the persona's real prompt (`roundtable prompt`'s) with the question appended. An answer recalls
a fact when it holds the fact's answer word. Memory off is the same conversation with no summary.

Run from the repository root: python bench/memory.py [--filler N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from langchain_core.messages import HumanMessage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import default_config  # noqa: E402
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
FILLER = (
    "Ana: Let us keep going with the weekly notes.",
    "Sage: Agreed, one thing at a time and calmly.",
)


async def run(filler_lines: int, data_dir: Path, memory_on: bool) -> tuple[int, list[float], int]:
    """(facts recalled, seconds per summary update, lines in the conversation before the questions)."""
    scratch = data_dir / ("on" if memory_on else "off")
    scratch.mkdir()
    config = default_config(scratch, **{'participants = ["nova", "sage", "rex"]': 'participants = ["sage"]'})
    async with open_app(config, ConsolePort(lambda _: None), environ={}) as app:
        await app.service.run_command(KEY, ListPersonas())  # the channel, with Sage alone in it
        db, persona = app.db, app.personas[PERSONA]
        for fact, _, _ in FACTS:
            await history.append_line(db, KEY, LineKind.HUMAN, "ana", "Ana", f"Sage, please remember: {fact}")
        for number in range(filler_lines):
            author, text = FILLER[number % 2].split(": ", 1)
            kind = LineKind.HUMAN if author == "Ana" else LineKind.PERSONA
            await history.append_line(db, KEY, kind, author.lower(), author, f"{text} (note {number})")
        seconds: list[float] = []
        if memory_on:
            started = time.perf_counter()
            updates = await app.engine.memory.update(KEY, persona)  # each folds up to 60 lines in
            seconds = [(time.perf_counter() - started) / updates] * updates if updates else []
            summary = await memory.summary(db, KEY, PERSONA)
            print("summary:", summary.text if summary else "(none)")
        recalled = 0
        prompt = await app.engine.prompt_for(KEY, PERSONA)
        model = app.models.persona_model(persona, ["Ana"])
        for _, question, word in FACTS:
            reply = await model.ainvoke([*prompt, HumanMessage(content=f"Ana: Sage, {question}")])
            recalled += word in str(reply.content).casefold()
        return recalled, seconds, len(FACTS) + filler_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--filler", type=int, default=220, help="lines between the facts and the questions")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        on, seconds, lines = asyncio.run(run(args.filler, Path(scratch), memory_on=True))
        off, _, _ = asyncio.run(run(args.filler, Path(scratch), memory_on=False))
    took = time.perf_counter() - started
    per_update = sum(seconds) / len(seconds) if seconds else 0.0
    block = "\n".join(
        [
            f"Machine: {machine(load)}. Default config, embedded Gemma 3 270M; {len(FACTS)} facts stated once, "
            f"then {args.filler} other lines ({lines} in all), then one question per fact to Sage; {took:.0f} s.",
            "",
            "| metric | memory on | memory off |",
            "| --- | --- | --- |",
            f"| facts recalled | {on}/{len(FACTS)} | {off}/{len(FACTS)} |",
            f"| summary updates | {len(seconds)}, {per_update:.1f} s each on average | none |",
        ]
    )
    print(block)
    rewrite_block(block, name="memory")


if __name__ == "__main__":
    main()
