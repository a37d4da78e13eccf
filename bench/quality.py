"""What the personas say on the local models: the labelled human lines of bench/lines/{dev,held_out}/quality.jsonl
played in new console channels (some moderated) through the whole app with the shipped config, on three
setups: the embedded gemma-3-270m, the embedded qwen2.5-coder-1.5b (the default), and
qwen2.5-coder-1.5b served by a real llama.cpp OpenAI-compatible server (bench/llama_server.py) that
the `openai` provider reaches. bench/scorers/quality.py checks every reply for echoes, copies, copies of
the persona's examples, chat-template junk, leaks, wrong speakers, cut-off or system-looking text, and
every line for false actions, skipped turns, silence and who answered first; and since issue #55 whether a
reply is worth reading (it addresses the wrong person, restates the line, answers a line nobody said, or talks
about its own role). It counts the turns that passed (posted nothing) from graph.observe.TURNS in-process,
and the review's machinery notices in one-line (unmoderated) rounds. Then, unless --no-judge, the
judge (graph/judge.py, on the same model) grades a sample of the default's replies, and of echoes and
copies made from the same lines. Prints the tables; after a finished run rewrites the comparison, the
default's table and one channel's transcript in docs/quality.md.

Run from the repository root: python bench/quality.py [--parts dev,held_out] [--runs N] [--setups all|NAME,...]
[--channels N] [--lines N] [--transcript CHANNEL] [--no-examples] [--no-judge] [--no-docs] [--replies-out PATH].
A setup that fails
(a server that did not start) leaves the others' rows, writes nothing and makes the run exit 1 at the end.
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
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.lines import Part  # noqa: E402
from bench.llama_server import llama_server  # noqa: E402
from bench.parts import add_arguments, load_parts  # noqa: E402
from bench.quality_report import (  # noqa: E402
    HUMAN,
    Judged,
    Played,
    Reply,
    Results,
    comparison_table,
    judge_table,
    quality_table,
    report_problems,
    score_played,
)
from bench.report import rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.judge import JUDGE_SCHEMA, judge_draft  # noqa: E402
from graph.models.factory import DEFAULT_MODEL, DEFAULT_MODERATOR_MODEL  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, SMALL_LOCAL_MODEL, ensure_gguf  # noqa: E402
from graph.observe import TURNS  # noqa: E402
from personas import load_personas  # noqa: E402

USER = "you"  # the console's user: a channel manager, who may switch moderation on
JUDGE_SAMPLE = 30  # replies the judge grades, with an echo and a copy made from each one's lines


@dataclass(frozen=True)
class Setup:
    name: str
    local_model: str
    served: bool = False  # through a llama.cpp server and the `openai` provider, not in-process


SETUPS = (
    Setup(SMALL_LOCAL_MODEL, SMALL_LOCAL_MODEL),
    Setup(DEFAULT_LOCAL_MODEL, DEFAULT_LOCAL_MODEL),
    Setup(f"{DEFAULT_LOCAL_MODEL} via llama.cpp server", DEFAULT_LOCAL_MODEL, served=True),
)


def turns_taken() -> dict[str, float]:
    """graph.observe.TURNS as this process has counted it, by outcome ("spoke", "skipped", "passed")."""
    return {
        sample.labels["outcome"]: sample.value
        for metric in TURNS.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


def by_channel(parts: dict[Part, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Every part's labelled lines by channel ("dev/coffee"), in order."""
    channels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for part, lines in parts.items():
        for line in lines:
            channels[f"{part}/{line['channel']}"].append(line)
    return channels


def split(results: Results, part: Part) -> Results:
    """One part's channels out of a run over all of them, named as labelled."""
    return {name.split("/", 1)[1]: lines for name, lines in results.items() if name.startswith(f"{part}/")}


async def play(
    channels: dict[str, list[dict[str, Any]]],
    scratch: Path,
    examples: bool = True,
    judge: bool = True,
    setup: Setup = SETUPS[1],
) -> tuple[dict[str, list[Played]], list[str], Judged]:
    """Every channel's lines through the app on one setup; what each got, the whole console transcript
    by channel, and the judge's verdicts on a sample."""
    with ExitStack() as stack:
        personas_dir = ROOT / "personas" if examples else without_examples(scratch / "personas")
        overrides = {
            f'model = "{DEFAULT_LOCAL_MODEL}"': f'model = "{setup.local_model}"',
            'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"',
        }
        environ: dict[str, str] = {}
        if setup.served:
            path = ensure_gguf(MODELS_DIR, setup.local_model)
            served = stack.enter_context(llama_server(str(path)))
            overrides.update(
                {
                    'base_url = ""': f'base_url = "{served.base_url}"',
                    f'model = "{DEFAULT_MODEL}"': f'model = "{setup.local_model}"',
                    f'moderator_model = "{DEFAULT_MODERATOR_MODEL}"': f'moderator_model = "{setup.local_model}"',
                    # Quality, not latency: one llama.cpp slot on 2 shared cores can take longer than the
                    # shipped 60 s for a long prompt, and every timed-out call is retried while the server
                    # still works on it, which only lengthens the queue.
                    "timeout_seconds = 60": "timeout_seconds = 600",
                }
            )
            environ["OPENAI_API_KEY"] = served.api_key
        config = default_config(scratch, personas=personas_dir, **overrides)
        return await _play(channels, config, personas_dir, environ, judge)


async def _play(
    channels: dict[str, list[dict[str, Any]]], config: Any, personas_dir: Path, environ: dict[str, str], judge: bool
) -> tuple[dict[str, list[Played]], list[str], Judged]:
    personas = load_personas(personas_dir)
    by_name = {p.display_name: p.id for p in personas.values()}
    names = {p.id: p.display_name for p in personas.values()}
    examples = {p.id: p.examples for p in personas.values()}
    out: list[str] = []
    transcripts: dict[str, list[str]] = {}
    results: dict[str, list[Played]] = {}
    async with open_app(config, ConsolePort(out.append, user=USER), environ=environ) as app:
        for channel, lines in channels.items():
            key = f"console:quality-{channel.replace('/', '-')}"
            shown = transcripts[channel] = []
            seen: list[str] = []  # the lines every persona present was delivered, as "Name: text"
            if lines[0]["moderated"]:
                await app.service.handle(Inbound(key, USER, HUMAN, "/moderate on", event_id=f"{key}-mod"))
                shown.append(f"{HUMAN}: /moderate on")
            results[channel] = []
            for number, line in enumerate(lines):
                before = len(out)
                counted = turns_taken()
                started = time.perf_counter()
                await app.service.handle(Inbound(key, USER, HUMAN, line["text"], event_id=f"{key}-{number}"))
                await app.service.wait_idle(key)
                seconds = time.perf_counter() - started
                taken = {k: v - counted.get(k, 0.0) for k, v in turns_taken().items()}
                said = out[before:]
                shown += [f"{HUMAN}: {line['text']}", *said]
                replies: list[Reply] = []
                window = list(seen)
                seen.append(f"{HUMAN}: {line['text']}")
                for entry in said:
                    name, _, text = entry[1:].partition("] ")
                    if entry.startswith("[") and name in by_name:
                        replies.append(Reply(by_name[name], name, text, line["text"], list(window), 0.0))
                        window.append(f"{name}: {text}")
                        seen.append(f"{name}: {text}")
                for reply in replies:
                    reply.seconds = seconds / len(replies)
                print(f"  {channel} {number + 1}/{len(lines)} {seconds:.0f} s:", *said, sep="\n    ", flush=True)
                played = Played(
                    kind=line["kind"],
                    text=line["text"],
                    moderated=line["moderated"],
                    addressed=line["addressed"],
                    replies=replies,
                    approvals=sum(1 for e in said if e.startswith("[approval")),
                    notices=[e for e in said if e.startswith("[system]")],
                    turns=round(sum(taken.values())),
                    passes=round(taken.get("passed", 0.0)),
                )
                score_played(played, names, examples)
                results[channel].append(played)
        judged = await judge_sample(app, results, personas) if judge else Judged()
    return results, [f"{c}\n" + "\n".join(t) for c, t in transcripts.items()], judged


async def judge_sample(app: Any, results: dict[str, list[Played]], personas: dict[str, Any]) -> Judged:
    """The judge's verdicts on the first JUDGE_SAMPLE replies, and on an echo of the line each answered
    and a copy of the newest earlier line of its window, which the text checks catch."""
    judged = Judged()
    model = app.models.judge_model(JUDGE_SCHEMA)
    sample = [r for lines in results.values() for p in lines for r in p.replies][:JUDGE_SAMPLE]
    for reply in sample:
        persona = personas[reply.persona]
        made = [reply.answered, *(_TAG.sub("", line, count=1) for line in reply.window[-1:])]
        for draft, tally in [(reply.text, judged.replies), *((m, judged.made_copies) for m in made)]:
            started = time.perf_counter()
            verdict = await judge_draft(model, persona, reply.window, draft, attempts=1, backoff_seconds=0)
            judged.seconds.append(time.perf_counter() - started)
            if verdict is None:
                judged.failed += 1
            else:
                tally[verdict.verdict] += 1
    return judged


_TAG = re.compile(r"^[^:]{1,40}: ")


def without_examples(into: Path) -> Path:
    """A copy of the shipped personas without their example lines, to measure what they do."""
    into.mkdir(parents=True)
    for source in (ROOT / "personas").glob("*.toml"):
        text = re.sub(r"(?ms)^examples = \[.*?^\]\n", "", source.read_text(encoding="utf-8"))
        (into / source.name).write_text(text, encoding="utf-8")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    parser.add_argument(
        "--setups",
        default="all",
        help=f"'all', or a comma list of 'default' (the default model in-process) and: {', '.join(s.name for s in SETUPS)}",
    )
    parser.add_argument("--channels", type=int, default=0, help="play only the first N channels of each part (0: all)")
    parser.add_argument("--lines", type=int, default=0, help="play only the first N lines of each channel (0: all)")
    parser.add_argument("--transcript", default="launch", help="the dev channel whose transcript the docs show")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    parser.add_argument("--no-examples", action="store_true", help="the personas without their example lines")
    parser.add_argument("--no-judge", action="store_true", help="skip the judge's sample")
    parser.add_argument(
        "--replies-out",
        type=Path,
        default=None,
        help="also write every reply of every run as JSON to PATH (run, channel, line, asker, speaker, reply)",
    )
    args = parser.parse_args()
    names = [DEFAULT_LOCAL_MODEL if name == "default" else name for name in args.setups.split(",")]
    chosen = SETUPS if args.setups == "all" else [s for s in SETUPS if s.name in names]
    if not chosen:
        parser.error(f"--setups {args.setups!r} names no setup; choose from: {', '.join(s.name for s in SETUPS)}")
    parts = load_parts("quality", args.parts)
    channels: dict[str, list[dict[str, Any]]] = {}
    for part in parts:
        ours = [(name, lines) for name, lines in by_channel(parts).items() if name.startswith(f"{part}/")]
        channels.update((name, lines[: args.lines or None]) for name, lines in ours[: args.channels or None])
    load = os.getloadavg()[0]
    started = time.perf_counter()
    measured: list[tuple[str, dict[Part, list[Results]]]] = []
    blocks: dict[str, str] = {}
    failed: list[str] = []
    replies_out: list[dict[str, Any]] = []
    for setup in chosen:
        print(f"{setup.name}:", flush=True)
        setup_started = time.perf_counter()
        runs: dict[Part, list[Results]] = {part: [] for part in parts}
        try:
            for run in range(args.runs):
                judge = not args.no_judge and setup == SETUPS[1] and run == 0
                with tempfile.TemporaryDirectory() as scratch:
                    results, transcripts, judged = asyncio.run(
                        play(channels, Path(scratch), examples=not args.no_examples, judge=judge, setup=setup)
                    )
                for part in parts:
                    runs[part].append(split(results, part))
                    report_problems(runs[part][-1], part)
                if args.replies_out is not None:  # written after every run, so a stopped run keeps the ones before
                    replies_out += replies_of(results, run + 1, setup.name if len(chosen) > 1 else "")
                    write_replies(args.replies_out, replies_out)
                if judge:
                    blocks["judge"] = judge_table(judged)
                    print(blocks["judge"])
                if run == 0 and setup == SETUPS[1]:
                    blocks["quality-transcript"] = transcript_block(transcripts, args.transcript)
        except Exception as exc:  # one setup failing (a server that did not start) leaves the others' rows
            print(f"{setup.name} failed: {type(exc).__name__}: {exc}", flush=True)
            failed.append(setup.name)
            continue
        measured.append((setup.name, runs))
        table = quality_table(runs, time.perf_counter() - setup_started, load, args.runs, setup.local_model)
        print(table)
        if setup == SETUPS[1]:
            blocks["quality"] = table + (f"\n\n{blocks.pop('judge')}" if "judge" in blocks else "")
            if "quality-transcript" in blocks:  # opened by the stamp of the run it is from
                stamp_line = table.partition("\n")[0]
                blocks["quality-transcript"] = f"{stamp_line}\n\n{blocks['quality-transcript']}"
    comparison = comparison_table(measured, time.perf_counter() - started, load, args.runs)
    print(comparison, blocks.get("quality-transcript", ""), sep="\n\n")
    if failed:
        sys.exit(f"failed setups: {', '.join(failed)}; nothing written")
    if not args.no_docs:
        for name in ("quality", "quality-transcript"):
            if name in blocks:
                rewrite_block(blocks[name], name=name)
        if len(measured) == len(SETUPS):
            rewrite_block(comparison, name="models-quality")


def replies_of(results: Results, run: int, setup: str = "") -> list[dict[str, Any]]:
    """Every reply of one run, with the human line it answered and who said that line."""
    return [
        {
            "run": run,
            **({"setup": setup} if setup else {}),
            "channel": channel,
            "line": played.text,
            "asker": HUMAN,
            "speaker": reply.speaker,
            "reply": reply.text,
        }
        for channel, lines in results.items()
        for played in lines
        for reply in played.replies
    ]


def write_replies(path: Path, replies: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps(replies, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def transcript_block(transcripts: list[str], channel: str) -> str:
    """One dev channel's console transcript, as printed."""
    dev = [t for t in transcripts if t.startswith("dev/")] or transcripts
    shown = next((t for t in dev if t.startswith(f"dev/{channel}\n")), dev[0])
    name, _, body = shown.partition("\n")
    return f"Channel `{name}`, from the first run above, exactly as the console printed it:\n\n```\n{body}\n```"


if __name__ == "__main__":
    main()
