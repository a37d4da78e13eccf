"""Recall with memory on and off, on the embedded default (Qwen2.5-Coder-1.5B-Instruct, default config):
conversations of several people (bench/lines/{dev,held_out}/memory.jsonl) with facts that compete and
facts corrected later, chit-chat between, then --filler more lines of chat so that the conversation has
left Sage's window, then the questions, each asked of Sage in the channel.

Everything goes through the whole app (console port, the local provider): every line is a person's
message handled by the service, as a platform would deliver it, in a channel where Sage alone takes
part and listens (`/persona quiet sage`: it speaks only when named, so the conversation costs no
replies), and the memory keeper folds what leaves the window in the background as it does after any
round. Each question names Sage, so it gets a real round, with the review, and its posted answer is
scored by bench/scorers/memory.py: the asked fact, none of the competing or corrected values, no
recital of the other facts. Memory off is the same with `[memory] summaries = false`. The bench config
lifts the flood limits ([limits]) so that every line starts its round, as spread-out chat would.

Run from the repository root: python bench/memory.py [--parts dev,held_out] [--conversations N]
[--filler N] [--questions N] [--memory both|on|off] [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.lines import Part, labelled  # noqa: E402
from bench.parts import parts_option  # noqa: E402
from bench.report import commit, machine, rewrite_block  # noqa: E402
from bench.scorers.memory import Question, label_problems, score  # noqa: E402
from bench.scorers.text import mentions_any  # noqa: E402
from bot.app import App, open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from personas import Persona  # noqa: E402

PERSONA = "sage"
# Chat after a conversation, before its questions: what moves the conversation out of the window. It
# holds no labelled value (checked before a run), so it neither answers nor spoils a question.
FILLER = (
    "Has anyone seen the new plant in the kitchen?",
    "It looks a bit thirsty, I watered it this morning.",
    "The lift is slow again today.",
    "I took the stairs, good exercise anyway.",
    "Who left the radio on last night?",
    "Guilty, sorry about that.",
    "The cake in the fridge is free for all, by the way.",
    "Thank you, that made my afternoon.",
    "My train was twenty minutes late again.",
    "Same here, the signals were down near the bridge.",
    "Did the new chairs arrive?",
    "Half of them did, the rest come next month.",
    "I am trying that new running route along the canal.",
    "Careful, it gets muddy after rain.",
    "Anyone up for a quiz night soon?",
    "Count me in, as long as there is no sports round.",
    "The blinds in the corner office are stuck.",
    "I will tell facilities when they pick up.",
    "That podcast you mentioned was great.",
    "Glad you liked it, the second season is even better.",
)
CLOCK = re.compile(r"It is \w+ \d{2} \w+ \d{4}, \d{2}:\d{2} \([^)]*\)\.")  # graph/prompt.py's clock line
NO_LIMITS = {  # flood limits off: a scripted conversation arrives faster than people type
    "user_messages_per_minute = 12": "user_messages_per_minute = 10000",
    "channel_rounds_per_minute = 20": "channel_rounds_per_minute = 10000",
}


class AnswerPort(ConsolePort):
    """The console port, keeping what each persona posted in each channel, in order."""

    def __init__(self) -> None:
        super().__init__(lambda _: None)
        self.said: dict[str, list[tuple[str, str]]] = {}

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        self.said.setdefault(channel_key, []).append((persona.id, text))


@dataclass
class Side:
    memory_on: bool
    right: int = 0
    asked: int = 0
    in_window: int = 0  # questions whose conversation still had a line in Sage's window when asked
    seconds: float = 0.0  # playing the lines, folds included
    misses: list[str] = field(default_factory=list)


async def own_text(app: App, key: str) -> str:
    """What Sage knows without the conversation: its persona file and its prompt before any line, the
    clock line aside (today's date changes daily; a label holding it would say so on that day alone)."""
    prompt = await app.engine.prompt_for(key, PERSONA)
    system = " ".join(str(m.content) for m in prompt if not (m.id or "").startswith("line-"))
    return CLOCK.sub(" ", system) + " " + json.dumps(app.personas[PERSONA].model_dump(mode="json"))


async def say(app: App, key: str, author: str, text: str, event: str) -> None:
    await app.service.handle(Inbound(key, author.casefold(), author, text, event_id=event, tenant="console"))
    await app.service.wait_idle(key)


async def play(
    app: App, port: AnswerPort, number: int, line: dict[str, Any], filler: int, asked: int, side: Side
) -> None:
    """One conversation in its own channel, the filler, then its questions, each answer scored."""
    key = f"console:memory-{number}"
    user = app.config.settings.bot.console_user
    setup = await app.service.handle(Inbound(key, user, user, f"/persona quiet {PERSONA}", tenant="console"))
    if setup is None or not setup.ok:
        raise SystemExit(f"{key}: {setup.reply if setup else 'no reply'}")
    questions = [Question.of(q) for q in line["questions"]]
    questions = questions[:asked] if asked else questions
    problems = label_problems(questions, await own_text(app, key))
    if problems:
        raise SystemExit("labels a memoryless answer would meet:\n" + "\n".join(problems))
    authors = sorted({said["author"] for said in line["conversation"]})
    started = time.perf_counter()
    for index, said in enumerate(line["conversation"]):
        await say(app, key, said["author"], said["text"], f"m{number}-{index}")
    for index in range(filler):
        await say(app, key, authors[index % len(authors)], FILLER[index % len(FILLER)], f"f{number}-{index}")
    await app.engine.memory.idle(key)  # the folds the rounds started have finished
    side.seconds += time.perf_counter() - started
    window = " ".join(
        str(m.content) for m in await app.engine.prompt_for(key, PERSONA) if (m.id or "").startswith("line-")
    )
    seen = any(said["text"] in window for said in line["conversation"])
    answers = []
    for index, question in enumerate(questions):
        before = len(port.said.get(key, []))
        await say(app, key, authors[0], question.ask, f"q{number}-{index}")
        answers.append(" ".join(text for who, text in port.said.get(key, [])[before:] if who == PERSONA))
    label = "memory on" if side.memory_on else "memory off"
    for question, answer, verdict in zip(questions, answers, score(answers, questions), strict=True):
        side.right += verdict.right
        side.asked += 1
        side.in_window += seen
        print(
            f"{label}: {'RIGHT' if verdict.right else 'wrong'} {question.ask} -> {answer!r} {verdict.why}", flush=True
        )
        if not verdict.right:
            side.misses.append(f"{question.ask} -> {answer!r} ({verdict.why})")


async def run(
    model: str, lines: list[dict[str, Any]], filler: int, asked: int, data_dir: Path, memory_on: bool
) -> Side:
    scratch = data_dir / ("on" if memory_on else "off")
    scratch.mkdir(parents=True)
    config = default_config(
        scratch,
        ROOT / "personas",
        **{
            'participants = ["nova", "sage", "rex"]': f'participants = ["{PERSONA}"]',
            f'model = "{DEFAULT_LOCAL_MODEL}"': f'model = "{model}"',
            'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"',
            "summaries = true": f"summaries = {'true' if memory_on else 'false'}",
            **NO_LIMITS,
        },
    )
    side = Side(memory_on)
    port = AnswerPort()
    async with open_app(config, port, environ={}) as app:
        for number, line in enumerate(lines):
            await play(app, port, number, line, filler, asked, side)
    return side


def cell(side: Side | None, what: str) -> str:
    if side is None:
        return "not run"
    if what == "right":
        return f"{side.right}/{side.asked}"
    if what == "window":
        return f"{side.in_window}/{side.asked}"
    return f"{side.seconds:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--parts", type=parts_option, default=("dev",), help="comma list: dev, held_out (make bench: both)"
    )
    parser.add_argument("--conversations", type=int, default=0, help="the first N conversations of each part (0: all)")
    parser.add_argument(
        "--filler", type=int, default=160, help="lines of chat between a conversation and its questions"
    )
    parser.add_argument(
        "--memory", choices=("both", "on", "off"), default="both", help="one side alone leaves the docs alone"
    )
    parser.add_argument("--questions", type=int, default=0, help="the first N questions of each conversation (0: all)")
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--no-docs", action="store_true", help="print the figures, leave docs/benchmarks.md alone")
    args = parser.parse_args()
    parts: tuple[Part, ...] = args.parts
    # Every part's lines first: a missing held-out file stops the run before any model time is spent.
    loaded = {part: labelled("memory", part) for part in parts}
    sized = {part: lines[: args.conversations] if args.conversations else lines for part, lines in loaded.items()}
    values = [
        v for lines in loaded.values() for line in lines for q in line["questions"] for v in (*q["holds"], *q["lacks"])
    ]
    spoiled = [text for text in FILLER if mentions_any(text, values)]
    if spoiled:
        raise SystemExit(f"filler lines hold a labelled value: {spoiled}")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    sides: dict[tuple[Part, bool], Side] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for part in parts:
            for memory_on in (True, False):
                if args.memory != ("off" if memory_on else "on"):
                    sides[part, memory_on] = asyncio.run(
                        run(args.model, sized[part], args.filler, args.questions, Path(scratch) / part, memory_on)
                    )
    took = time.perf_counter() - started
    columns = [(part, on) for part in parts for on in (True, False)]
    size = "; ".join(
        f"{part}: {len(sized[part])} of {len(loaded[part])} conversations, "
        f"{sum(min(len(line['questions']), args.questions or 99) for line in sized[part])} questions"
        for part in parts
    )
    block = "\n".join(
        [
            f"Machine: {machine(load)}. Commit {commit()}. One run of each part ({size}); default config, embedded"
            f" {LOCAL_MODELS[args.model].title}, Sage alone and listening; each conversation then {args.filler} lines of"
            f" chat, then its questions to Sage through the round and the review; {took:.0f} s in all.",
            "",
            "| metric | " + " | ".join(f"{part}, memory {'on' if on else 'off'}" for part, on in columns) + " |",
            "| --- |" + " --- |" * len(columns),
            "| answers right (the fact, no competing or old value, no recital) | "
            + " | ".join(cell(sides.get(c), "right") for c in columns)
            + " |",
            "| questions asked while a conversation line was still in the window | "
            + " | ".join(cell(sides.get(c), "window") for c in columns)
            + " |",
            "| seconds playing the lines (summary folds included) | "
            + " | ".join(cell(sides.get(c), "seconds") for c in columns)
            + " |",
        ]
    )
    print(block)
    for (part, on), side in sides.items():
        for miss in side.misses:
            print(f"  {part}, memory {'on' if on else 'off'} missed: {miss}")
    if not args.no_docs and args.memory == "both":
        rewrite_block(block, name="memory")


if __name__ == "__main__":
    main()
