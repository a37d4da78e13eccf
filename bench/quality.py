"""What the personas say on the local models: the labelled human lines of tests/data/quality_lines.jsonl
played in new console channels (some moderated) through the whole app with the shipped config, on three
setups: the embedded gemma-3-270m, the embedded qwen2.5-coder-1.5b (the default), and
qwen2.5-coder-1.5b served by a real llama.cpp OpenAI-compatible server (bench/llama_server.py) that
the `openai` provider reaches. Every reply is checked for echoes, copies, copies of the persona's
examples, chat-template junk, leaks, wrong speakers, cut-off or system-looking text and false actions.
Then, unless --no-judge, the judge (graph/judge.py, on the same model) grades a sample of the default's
replies, and of echoes and copies made from the same lines. Prints the tables; rewrites the comparison,
the default's table and one channel's transcript in docs/benchmarks.md.

Run from the repository root: python bench/quality.py [--setups all|NAME,...] [--channels N] [--lines N]
[--transcript CHANNEL] [--no-examples] [--no-judge] [--no-docs]. A setup that fails (a server that did
not start) leaves the others' rows and makes the run exit 1 at the end.
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
from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.llama_server import llama_server  # noqa: E402
from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.judge import JUDGE_SCHEMA, judge_draft  # noqa: E402
from graph.models.factory import DEFAULT_MODEL, DEFAULT_MODERATOR_MODEL  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, SMALL_LOCAL_MODEL, ensure_gguf  # noqa: E402
from graph.prompt import INSTRUCTION_PHRASES  # noqa: E402
from graph.review import copied_example, leaked_phrase, looks_cut_off, repeats, speaks_as_other  # noqa: E402
from graph.template_text import template_syntax  # noqa: E402
from personas import load_personas  # noqa: E402

LINES = ROOT / "tests" / "data" / "quality_lines.jsonl"
USER = "you"  # the console's user: a channel manager, who may switch moderation on
HUMAN = "Ana"
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


@dataclass
class Reply:
    persona: str
    text: str
    answered: str
    window: list[str]
    seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass
class Judged:
    """The judge's verdicts: on replies the text checks passed, and on echoes and copies they catch."""

    replies: Counter[str] = field(default_factory=Counter)
    made_copies: Counter[str] = field(default_factory=Counter)  # echoes and copies made from the lines
    seconds: list[float] = field(default_factory=list)
    failed: int = 0  # no verdict


@dataclass
class Played:
    kind: str
    text: str
    moderated: bool
    addressed: list[str]
    replies: list[Reply]
    false_action: bool
    notices: list[str]

    @property
    def addressed_first(self) -> bool | None:
        if not self.addressed:
            return None
        return bool(self.replies) and self.replies[0].persona in self.addressed


def load_lines(path: Path = LINES) -> dict[str, list[dict[str, Any]]]:
    """The labelled lines by channel, in order."""
    channels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            line = json.loads(raw)
            channels[line["channel"]].append(line)
    return channels


def problems_of(reply: Reply, names: dict[str, str], examples: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Every check a reply fails, by the definitions of graph/review.py (and graph/template_text.py)."""
    found = []
    others = [name for pid, name in names.items() if pid != reply.persona] + [HUMAN]
    text = reply.text
    if repeats(text, reply.answered):
        found.append("echo")
    if any(repeats(text, line) for line in reply.window):
        found.append("copy")
    if copied_example(text, (examples or {}).get(reply.persona, ())):
        found.append("example copy")
    if template_syntax(text):
        found.append("template junk")
    if leaked_phrase(text, INSTRUCTION_PHRASES):
        found.append("leak")
    if speaks_as_other(text, names[reply.persona], others) or text.lstrip().startswith(tuple(f"{o}:" for o in others)):
        found.append("wrong speaker")
    if not text.strip() or looks_cut_off(text) or text.lstrip().startswith("[") or "[system]" in text.casefold():
        found.append("empty, cut-off or system-looking")
    return found


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
            key = f"console:quality-{channel}"
            shown = transcripts[channel] = []
            seen: list[str] = []  # the lines every persona present was delivered, as "Name: text"
            if lines[0]["moderated"]:
                await app.service.handle(Inbound(key, USER, HUMAN, "/moderate on", event_id=f"{key}-mod"))
                shown.append(f"{HUMAN}: /moderate on")
            results[channel] = []
            for number, line in enumerate(lines):
                before = len(out)
                started = time.perf_counter()
                await app.service.handle(Inbound(key, USER, HUMAN, line["text"], event_id=f"{key}-{number}"))
                await app.service.wait_idle(key)
                seconds = time.perf_counter() - started
                said = out[before:]
                shown += [f"{HUMAN}: {line['text']}", *said]
                replies: list[Reply] = []
                window = list(seen)
                seen.append(f"{HUMAN}: {line['text']}")
                for entry in said:
                    name, _, text = entry[1:].partition("] ")
                    if entry.startswith("[") and name in by_name:
                        replies.append(Reply(by_name[name], text, line["text"], list(window), 0.0))
                        window.append(f"{name}: {text}")
                        seen.append(f"{name}: {text}")
                for reply in replies:
                    reply.seconds = seconds / len(replies)
                    reply.problems = problems_of(reply, names, examples)
                print(f"  {channel} {number + 1}/{len(lines)} {seconds:.0f} s:", *said, sep="\n    ", flush=True)
                results[channel].append(
                    Played(
                        kind=line["kind"],
                        text=line["text"],
                        moderated=line["moderated"],
                        addressed=line["addressed"],
                        replies=replies,
                        false_action=any(e.startswith("[approval") for e in said),
                        notices=[e for e in said if e.startswith("[system]")],
                    )
                )
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


def judge_table(judged: Judged) -> str:
    def share(tally: Counter[str], ok: bool) -> str:
        total = sum(tally.values())
        count = tally["ok"] if ok else total - tally["ok"]
        return f"{count}/{total} = {count / max(total, 1):.0%}"

    per_call = sum(judged.seconds) / max(len(judged.seconds), 1)
    verdicts = ", ".join(f"{v} {n}" for v, n in (judged.replies + judged.made_copies).most_common())
    return "\n".join(
        [
            '| the judge (the same model, `[review] judge = "on"`) | measured |',
            "| --- | --- |",
            f"| rejects a reply the text checks passed | {share(judged.replies, ok=False)} |",
            f"| agrees with the text checks on an echo or a copy (rejects it) | {share(judged.made_copies, ok=False)} |",
            f"| answered no verdict | {judged.failed}/{len(judged.seconds)} |",
            f"| time per verdict | {per_call:.2f} s |",
            "",
            f"Verdicts: {verdicts}.",
        ]
    )


def without_examples(into: Path) -> Path:
    """A copy of the shipped personas without their example lines, to measure what they do."""
    into.mkdir(parents=True)
    for source in (ROOT / "personas").glob("*.toml"):
        text = re.sub(r"(?ms)^examples = \[.*?^\]\n", "", source.read_text(encoding="utf-8"))
        (into / source.name).write_text(text, encoding="utf-8")
    return into


CHECKS = ("echo", "copy", "example copy", "template junk", "leak", "wrong speaker", "empty, cut-off or system-looking")


def comparison_table(runs: list[tuple[Setup, dict[str, list[Played]]]], seconds: float, load: float) -> str:
    """One row per setup: each check's count among its replies, unanswered and addressed-first lines, and
    the wall seconds per reply (moderator decisions and review rewrites included)."""
    labels = ("echoes", "copies", "example copies", "template junk", "leaks", "wrong speakers", "cut-offs")
    head = ["setup", "replies", *labels, "unanswered", "addressed first", "s per reply"]
    rows = []
    for setup, results in runs:
        played = [p for lines in results.values() for p in lines]
        replies = [r for p in played for r in p.replies]
        counts = Counter(problem for r in replies for problem in r.problems)
        addressed = [p for p in played if p.addressed]
        first = sum(1 for p in addressed if p.addressed_first)
        per_reply = sum(r.seconds for r in replies) / max(len(replies), 1)
        cells = [
            setup.name,
            str(len(replies)),
            *(str(counts[c]) for c in CHECKS),
            f"{sum(1 for p in played if not p.replies)}/{len(played)}",
            f"{first}/{len(addressed)}",
            f"{per_reply:.1f}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    lines_played = sum(len(lines) for lines in runs[0][1].values()) if runs else 0
    return "\n".join(
        [
            f"Machine: {machine(load)}. {lines_played} human lines in {len(runs[0][1]) if runs else 0} new console "
            f"channels per setup, default config, {seconds:.0f} s in all.",
            "",
            "| " + " | ".join(head) + " |",
            "|" + " --- |" * len(head),
            *rows,
        ]
    )


def quality_table(
    results: dict[str, list[Played]], seconds: float, load: float, model: str = DEFAULT_LOCAL_MODEL
) -> tuple[str, dict[str, float]]:
    played = [p for lines in results.values() for p in lines]
    replies = [r for p in played for r in p.replies]
    counts = Counter(problem for r in replies for problem in r.problems)
    total = max(len(replies), 1)
    unanswered = sum(1 for p in played if not p.replies)
    addressed = [p for p in played if p.addressed]
    first = sum(1 for p in addressed if p.addressed_first)
    false_actions = sum(1 for p in played if p.false_action)
    moderated = sum(1 for lines in results.values() if lines and lines[0].moderated)
    per_reply = sum(r.seconds for r in replies) / total
    figures = {
        **{check: counts[check] / total for check in CHECKS},
        "unanswered": unanswered / max(len(played), 1),
        "addressed first": first / max(len(addressed), 1),
    }

    def row(metric: str, count: int, of: int, target: str, met: bool) -> str:
        return f"| {metric} | {count}/{of} = {count / max(of, 1):.0%} | {target} ({'met' if met else 'missed'}) |"

    lines = [
        f"Machine: {machine(load)}. {len(played)} human lines in {len(results)} new console channels "
        f"({moderated} moderated), default config, embedded {model}, {seconds:.0f} s; "
        f"{len(replies)} replies, {per_reply:.1f} s per reply.",
        "",
        "| metric | measured | target |",
        "| --- | --- | --- |",
        *(row(f"{check} replies", counts[check], len(replies), "0", counts[check] == 0) for check in CHECKS),
        row(
            "false actions (a proposal on a line asking for words)", false_actions, len(played), "0", not false_actions
        ),
        row("unanswered human lines", unanswered, len(played), "≤ 5%", unanswered <= 0.05 * len(played)),
        row("addressed persona answered first", first, len(addressed), "all", first == len(addressed)),
    ]
    by_kind: dict[str, list[Played]] = defaultdict(list)
    for p in played:
        by_kind[p.kind].append(p)
    lines += [
        "",
        "| kind of line | lines | answered | replies | replies with a problem |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {kind} | {len(ps)} | {sum(1 for p in ps if p.replies)} | {sum(len(p.replies) for p in ps)} | "
            f"{sum(1 for p in ps for r in p.replies if r.problems)} |"
            for kind, ps in sorted(by_kind.items())
        ),
    ]
    return "\n".join(lines), figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--setups", default="all", help=f"'all' or a comma list of: {', '.join(s.name for s in SETUPS)}"
    )
    parser.add_argument("--channels", type=int, default=0, help="play only the first N channels (0: all)")
    parser.add_argument("--lines", type=int, default=0, help="play only the first N lines of each channel (0: all)")
    parser.add_argument("--transcript", default="launch", help="the channel whose transcript the docs show")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="print only")
    parser.add_argument("--no-examples", action="store_true", help="the personas without their example lines")
    parser.add_argument("--no-judge", action="store_true", help="skip the judge's sample")
    args = parser.parse_args()
    chosen = SETUPS if args.setups == "all" else [s for s in SETUPS if s.name in args.setups.split(",")]
    channels = load_lines()
    if args.channels:
        channels = dict(list(channels.items())[: args.channels])
    if args.lines:
        channels = {name: lines[: args.lines] for name, lines in channels.items()}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    runs: list[tuple[Setup, dict[str, list[Played]]]] = []
    failed: list[str] = []
    for setup in chosen:
        print(f"{setup.name}:", flush=True)
        setup_started = time.perf_counter()
        judge = not args.no_judge and setup == SETUPS[1]
        try:
            with tempfile.TemporaryDirectory() as scratch:
                results, transcripts, judged = asyncio.run(
                    play(channels, Path(scratch), examples=not args.no_examples, judge=judge, setup=setup)
                )
        except Exception as exc:  # one setup failing (a server that did not start) leaves the others' rows
            print(f"{setup.name} failed: {type(exc).__name__}: {exc}", flush=True)
            failed.append(setup.name)
            continue
        runs.append((setup, results))
        table, _ = quality_table(results, time.perf_counter() - setup_started, load, setup.name)
        if judge:
            table += "\n\n" + judge_table(judged)
        print(table)
        report_problems(results)
        if setup == SETUPS[1]:
            shown = next((t for t in transcripts if t.startswith(f"{args.transcript}\n")), transcripts[0])
            name, _, body = shown.partition("\n")
            transcript = f"Channel `{name}`, from the run above, exactly as the console printed it:\n\n```\n{body}\n```"
            print(transcript)
            if not args.no_docs:
                rewrite_block(table, name="quality")
                rewrite_block(transcript, name="quality-transcript")
    comparison = comparison_table(runs, time.perf_counter() - started, load)
    print(comparison)
    if not args.no_docs and len(runs) == len(SETUPS):
        rewrite_block(comparison, name="models-quality")
    if failed:
        sys.exit(f"failed setups: {', '.join(failed)}")


def report_problems(results: dict[str, list[Played]]) -> None:
    for channel, played in results.items():
        for p in played:
            for r in p.replies:
                if r.problems:
                    print(f"  {channel}: {p.text!r} -> [{r.persona}] {r.text!r}: {', '.join(r.problems)}")
            if not p.replies:
                print(f"  {channel}: {p.text!r} unanswered: {p.notices}")
            if p.false_action:
                print(f"  {channel}: {p.text!r} got an approval request")


if __name__ == "__main__":
    main()
