"""Task mode on the embedded model (the default, Qwen2.5-Coder-1.5B-Instruct, unless --model): how
often its plans are usable, how many tasks do what their labelled expectations ask (bench/lines/
{dev,held_out}/tasks.jsonl, scored by bench/scorers/tasks.py), how many steps do work, and how well
the coordinator tells a task from chat (tasks_coordinator.jsonl). Through the whole app (console
port, default config with the personas' capabilities, local provider), one new console channel per
task, set to `/approvals mode on-the-loop` by the console user first, so that the actions a task
asks for run at once instead of waiting for a person (the scorer checks that they ran).

Each part runs with [tasks] max_parallel_steps = 3 (the default); --serial adds the development part
again with = 1, for the wall time of steps one at a time. A stopped run writes nothing.

Run from the repository root: python bench/tasks.py [--parts dev,held_out] [--tasks N] [--serial]
[--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.lines import Part, labelled  # noqa: E402
from bench.parts import parts_option  # noqa: E402
from bench.report import commit, machine, median, rewrite_block  # noqa: E402
from bench.scorers.tasks import Action, Expect, StepRun, TaskRun, Verdict, step_problem, verdict  # noqa: E402
from bot.app import App, open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.tasks import Plan  # noqa: E402
from storage import approvals, task_artifacts  # noqa: E402
from storage import tasks as stored_tasks  # noqa: E402
from storage.task_artifacts import ANSWER_STEP  # noqa: E402


@dataclass
class Ran:
    """One labelled request run as a task: what the run recorded, its verdict, and its steps' problems."""

    run: TaskRun
    verdict: Verdict
    planned: bool
    step_problems: dict[int, str | None]  # step id: why it does not complete in the score (None: it does)
    attempts: list[int]  # stored attempts per step
    seconds: float


@dataclass
class Pass:
    label: str
    ran: list[Ran]
    transcript: list[str]  # of the first task that counted (of the first task when none did)
    coordinator: str  # "right/total", or "" when not measured


async def recorded(app: App, key: str, request: str) -> tuple[TaskRun, bool, list[int]]:
    """What the app stored of the channel's task: the run as the scorer reads it, whether it had a
    valid plan, and each step's stored attempts."""
    record = await stored_tasks.latest(app.db, key)
    if record is None:
        return TaskRun(request, "not started", (), None), False, []
    plan = Plan.model_validate_json(record.plan) if record.plan else None
    artifacts = await task_artifacts.of_task(app.db, record.id)
    steps = tuple(
        StepRun(s.id, s.title, s.instruction, s.status, artifacts[s.id].text if s.id in artifacts else s.result_summary)
        for s in (plan.steps if plan else [])
    )
    actions = tuple(
        Action(a.action, a.args, a.status.value, a.task.step if a.task else None)
        for a in await approvals.in_task(app.db, record.id)
    )
    rows = await app.db.fetch_all(
        "SELECT text FROM lines WHERE channel_key = ? AND (kind = 'marker' OR author_id LIKE 'note:%')", (key,)
    )
    answer = artifacts.get(ANSWER_STEP)
    run = TaskRun(
        request, record.status, steps, answer.text if answer else None, actions, tuple(r["text"] for r in rows)
    )
    attempts = [r.attempt for r in await stored_tasks.step_records(app.db, record.id) if r.step_id != ANSWER_STEP]
    return run, plan is not None, attempts


async def run_pass(
    model: str,
    lines: list[dict[str, Any]],
    coordinator_lines: list[dict[str, Any]] | None,
    parallel: int,
    data_dir: Path,
    label: str,
) -> Pass:
    """Each labelled request as /task in a new channel, with [tasks] max_parallel_steps = `parallel`."""
    data_dir.mkdir()
    config = default_config(
        data_dir,
        ROOT / "personas",
        **{
            f'model = "{DEFAULT_LOCAL_MODEL}"': f'model = "{model}"',
            'cache_dir = ""': f'cache_dir = "{MODELS_DIR}"',
            "max_parallel_steps = 3": f"max_parallel_steps = {parallel}",
        },
    )
    assert config.settings.tasks.max_parallel_steps == parallel, "config.toml's max_parallel_steps line moved"
    user = config.settings.bot.console_user
    transcript: list[str] = []
    ran: list[Ran] = []
    first: list[str] = []
    coordinator = ""
    async with open_app(config, ConsolePort(transcript.append), environ={}) as app:
        for number, line in enumerate(lines):
            key, request = f"console:task-{number}", line["request"]
            setup = await app.service.handle(Inbound(key, user, user, "/approvals mode on-the-loop", tenant="console"))
            if setup is None or not setup.ok:
                raise SystemExit(f"{key}: {setup.reply if setup else 'no reply'}")
            before = len(transcript)
            started = time.perf_counter()
            await app.service.handle(Inbound(key, "u1", "Ana", f"/task {request}", event_id=f"task-{number}"))
            await app.service.wait_idle(key)
            seconds = time.perf_counter() - started
            run, planned, attempts = await recorded(app, key, request)
            outcome = verdict(run, Expect.of(line["expect"]))
            problems = {step.id: step_problem(step, run) for step in run.steps}
            ran.append(Ran(run, outcome, planned, problems, attempts, seconds))
            print(
                f"  [{label}] {'COUNTS' if outcome.counts else 'fails '} {run.status} in {seconds:.0f} s: "
                f"{request!r} {'; '.join(outcome.why)}",
                flush=True,
            )
            if number == 0 or (outcome.counts and not any(r.verdict.counts for r in ran[:-1])):
                first = [f"Ana: /task {request}", *transcript[before:]]
        if coordinator_lines is not None:
            right = sum([await app.engine.tasks.is_task(c["text"], "Ana") == c["is_task"] for c in coordinator_lines])
            coordinator = f"{right}/{len(coordinator_lines)}"
            print(f"  [{label}] coordinator right: {coordinator}", flush=True)
    return Pass(label, ran, first, coordinator)


def rows(side: Pass) -> dict[str, str]:
    """One pass's figures, by metric."""
    ran, total = side.ran, len(side.ran)
    steps = [why for r in ran for why in r.step_problems.values()]
    endings = Counter(r.run.status for r in ran)
    attempted = [n for r in ran for n in r.attempts]
    times = [r.seconds for r in ran] or [0.0]
    must = [r for r in ran if r.verdict.why and any(w.startswith("did not run") for w in r.verdict.why)]
    return {
        "tasks that count (completed, their actions ran, their answer meets its labels)": (
            f"{sum(r.verdict.counts for r in ran)}/{total}"
        ),
        "tasks completed (the app's status)": f"{endings['completed']}/{total}",
        "tasks whose labelled actions did not all run": f"{len(must)}/{total}",
        "tasks ended otherwise": ", ".join(f"{k} {v}" for k, v in sorted(endings.items()) if k != "completed")
        or "none",
        "a valid plan (after at most one re-ask)": f"{sum(r.planned for r in ran)}/{total}",
        "steps that complete in the score (a result that shows work)": f"{sum(w is None for w in steps)}/{len(steps)}",
        "steps the app completed but the score does not (promise, echo, copy)": str(
            sum(w is not None and not w.startswith("status") for w in steps)
        ),
        "steps retried (stored attempts > 1)": f"{sum(n > 1 for n in attempted)}/{len(attempted)}",
        "wall time per task, median (max)": f"{median(times):.0f} s ({max(times):.0f} s)",
        "coordinator: task or chat read right ([tasks] auto_detect)": side.coordinator or "not run",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--parts", type=parts_option, default=("dev",), help="comma list: dev, held_out (make bench: both)"
    )
    parser.add_argument("--tasks", type=int, default=0, help="the first N requests of each part (0: all)")
    parser.add_argument("--serial", action="store_true", help="the dev part again with max_parallel_steps = 1")
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--no-docs", dest="no_docs", action="store_true", help="print only")
    args = parser.parse_args()
    parts: tuple[Part, ...] = args.parts
    # Every part's lines first: a missing held-out file stops the run before any model time is spent.
    loaded = {part: (labelled("tasks", part), labelled("tasks_coordinator", part)) for part in parts}
    sized = {part: lines[: args.tasks] if args.tasks else lines for part, (lines, _) in loaded.items()}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    passes: list[Pass] = []
    with tempfile.TemporaryDirectory() as scratch:
        for part in parts:
            coordinator = loaded[part][1]
            passes.append(asyncio.run(run_pass(args.model, sized[part], coordinator, 3, Path(scratch) / part, part)))
        if args.serial:
            passes.append(
                asyncio.run(
                    run_pass(
                        args.model,
                        sized["dev"] if "dev" in sized else [],
                        None,
                        1,
                        Path(scratch) / "serial",
                        "dev, one step at a time",
                    )
                )
            )
    seconds = time.perf_counter() - started
    name = LOCAL_MODELS[args.model].title
    tables = [rows(side) for side in passes]
    size = "; ".join(f"{part}: {len(sized[part])} of {len(loaded[part][0])} requests" for part in parts)
    block = "\n".join(
        [
            f"Machine: {machine(load)}. Commit {commit()}. One run of each part ({size}); each `/task` in a new"
            f" console channel set on-the-loop, default config, embedded {name} in-process,"
            f" `[tasks] max_parallel_steps = 3` unless the column says otherwise; {seconds:.0f} s in all.",
            "",
            "| metric | " + " | ".join(side.label for side in passes) + " |",
            "| --- |" + " --- |" * len(passes),
            *(f"| {metric} | " + " | ".join(t[metric] for t in tables) + " |" for metric in tables[0]),
        ]
    )
    print(block)
    for side in passes:
        print(f"\n{side.label}:")
        for r in side.ran:
            print(f"  {r.run.status:10} {r.seconds:5.0f} s {r.run.request!r}: {'; '.join(r.verdict.why) or 'counts'}")
            for step in r.run.steps:
                print(f"    step {step.id} {step.title!r} {step.status}: {r.step_problems[step.id] or 'shows work'}")
    print(
        "\nTranscript of the first task that counted (of the first task when none did):\n"
        + "\n".join(passes[0].transcript)
    )
    if not args.no_docs:
        rewrite_block(block, name="tasks")
        # Opened by the run's own stamp: the transcript is of the run the tasks block measured.
        stamp_line = block.partition("\n")[0]
        transcript = "\n".join(passes[0].transcript)
        rewrite_block(f"{stamp_line}\n\n```text\n{transcript}\n```", name="task-transcript")


if __name__ == "__main__":
    main()
