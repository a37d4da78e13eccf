"""Task mode on the embedded model (the default, Qwen2.5-Coder-1.5B-Instruct, unless --model): how
often its plans are usable, its tasks finish with an answer and its steps are retried, how long a
task takes with its steps side by side against one at a time, and how well the coordinator tells a
task from chat. Through the whole app (console port, default config with the personas'
capabilities, local provider), one new channel per task.

The same requests run twice, in the same run: with [tasks] max_parallel_steps = 3 (the default),
then = 1, the config otherwise the same.

Run from the repository root: python bench/tasks.py [--tasks N] [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import MODELS_DIR, default_config  # noqa: E402
from bench.report import machine, median, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.step_results import copied_result, only_takes_it_on  # noqa: E402
from graph.task_schedule import copies_plan_line, same_title  # noqa: E402
from graph.tasks import Plan  # noqa: E402
from personas import load_personas  # noqa: E402
from storage import task_artifacts  # noqa: E402
from storage import tasks as stored_tasks  # noqa: E402
from storage.task_artifacts import ANSWER_STEP  # noqa: E402

REQUESTS = (
    "Plan a team offsite: pick a date, suggest a venue and write the invitation",
    "Write a short blog post about our new search feature and review it",
    "Design a logo idea for the coffee shop and describe it for the website",
    "Research three note-taking apps and recommend one",
    "Draft a welcome message for new members and check it for tone",
    "Compare two project names and pick the better one",
    "Summarise what remote work needs and write a one-paragraph policy",
    "Come up with a launch checklist for the mobile app",
    "Write a tagline for the newsletter and a subject line",
    "Review the onboarding steps and suggest one improvement",
)

# The coordinator's labelled lines for [tasks] auto_detect: True asks the team for work in steps.
COORDINATOR_LINES: tuple[tuple[str, bool], ...] = (
    ("Please plan the product launch: research competitors, write the announcement and design a banner", True),
    ("Can you draft a press release and then review it for typos?", True),
    ("Organise the team lunch: find a place, book a table and send the invite", True),
    ("Write a blog post about our API and prepare three tweets for it", True),
    ("Research hosting options and write a recommendation", True),
    ("Create an agenda for Monday's meeting and summarise last week's notes", True),
    ("Hi everyone, how was your weekend?", False),
    ("Nova, what's your favourite colour?", False),
    ("haha that's funny", False),
    ("Sage, do you think remote work is here to stay?", False),
    ("Thanks, that was helpful!", False),
    ("Rex, tabs or spaces?", False),
)


@dataclass
class Ran:
    """One request run as a task: how it ended, its final plan, its wall time, whether its answer was
    posted, and its steps' stored attempts (step id: attempts of the latest record)."""

    request: str
    status: str
    plan: Plan | None
    seconds: float
    answered: bool
    attempts: dict[int, int] = field(default_factory=dict)


@dataclass
class Pass:
    parallel: int
    ran: list[Ran]
    transcript: list[str]  # of the first task that completed (of the first task when none did)
    coordinator_right: int | None  # measured on the first pass only


async def run_pass(model: str, count: int, parallel: int, data_dir: Path, coordinator: bool) -> Pass:
    """Each request as /task in a new channel, with [tasks] max_parallel_steps = `parallel`."""
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
    transcript: list[str] = []
    ran: list[Ran] = []
    first: list[str] = []
    right: int | None = None
    async with open_app(config, ConsolePort(transcript.append), environ={}) as app:
        for number in range(count):
            key = f"console:task-{number}"
            request = REQUESTS[number % len(REQUESTS)]
            before = len(transcript)
            started = time.perf_counter()
            await app.service.handle(Inbound(key, "u1", "Ana", f"/task {request}", event_id=f"task-{number}"))
            await app.service.wait_idle(key)
            seconds = time.perf_counter() - started
            record = await stored_tasks.latest(app.db, key)
            plan = Plan.model_validate_json(record.plan) if record and record.plan else None
            status = record.status if record else "not started"
            if status == "running" and plan is not None and any(step.batches for step in plan.steps):
                status = "waiting for approval"  # a step's action waits for a person, as it should
            answered, attempts = False, {}
            if record is not None:
                answered = await task_artifacts.answer(app.db, record.id) is not None
                steps = await stored_tasks.step_records(app.db, record.id)
                attempts = {r.step_id: r.attempt for r in steps if r.step_id != ANSWER_STEP}
            ran.append(Ran(request, status, plan, seconds, answered, attempts))
            print(f"  [parallel {parallel}] {status} in {seconds:.0f} s: {request!r}", flush=True)
            if number == 0 or (status == "completed" and not any(r.status == "completed" for r in ran[:-1])):
                first = [f"Ana: /task {request}", *transcript[before:]]
        if coordinator:
            right = 0
            for line, is_task in COORDINATOR_LINES:
                right += await app.engine.tasks.is_task(line, "Ana") == is_task
            print(f"  coordinator right: {right}/{len(COORDINATOR_LINES)}", flush=True)
    return Pass(parallel, ran, first, right)


def _rows(side: Pass) -> dict[str, str]:
    """One pass's figures, by metric."""
    ran = side.ran
    total = len(ran)
    endings = Counter(r.status for r in ran)
    planned = [r.plan for r in ran if r.plan is not None]
    steps = [step for plan in planned for step in plan.steps]
    done_by_copy = sum(
        copied_result(step.result_summary, r.request, r.plan, step.id) is not None
        for r in ran
        if r.plan is not None
        for step in r.plan.steps
        if step.status == "completed"
    )
    done_by_promise = sum(
        only_takes_it_on(step.result_summary, r.request)
        for r in ran
        if r.plan is not None
        for step in r.plan.steps
        if step.status == "completed" and not step.batches
    )
    names = [persona.display_name for persona in load_personas(ROOT / "personas").values()]
    redone = sum(
        copies_plan_line(step.title, names) or any(same_title(step.title, e.title) for e in plan.steps[:index])
        for plan in planned
        for index, step in enumerate(plan.steps)
    )
    attempted = [n for r in ran for n in r.attempts.values()]
    times = [r.seconds for r in ran] or [0.0]
    others = ", ".join(f"{k} {v}" for k, v in sorted(endings.items()) if k != "completed") or "none"
    return {
        "a valid plan (after at most one re-ask)": f"{len(planned)}/{total}",
        "plans of more than one step": f"{sum(len(p.steps) > 1 for p in planned)}/{len(planned)}",
        "steps completed": f"{sum(s.status == 'completed' for s in steps)}/{len(steps)}",
        "steps retried (stored attempts > 1)": f"{sum(n > 1 for n in attempted)}/{len(attempted)}",
        "steps failed for good (after every try)": f"{sum(s.status == 'failed' for s in steps)}/{len(steps)}",
        "steps completed by a copy (of the request, the step or another result)": str(done_by_copy),
        'steps completed by only taking the step on ("Sure, let\'s get started.")': str(done_by_promise),
        "steps that are an earlier step again or copy a line of the plan message": f"{redone}/{len(steps)}",
        "tasks finished (completed)": f"{endings['completed']}/{total}",
        "tasks finished with their answer posted": f"{sum(r.status == 'completed' and r.answered for r in ran)}/{total}",
        "tasks ended otherwise": others,
        "wall time per task, median (max)": f"{median(times):.0f} s ({max(times):.0f} s)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=len(REQUESTS))
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--no-docs", dest="no_docs", action="store_true", help="print only")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        side_by_side = asyncio.run(run_pass(args.model, args.tasks, 3, Path(scratch) / "parallel", True))
        one_at_a_time = asyncio.run(run_pass(args.model, args.tasks, 1, Path(scratch) / "serial", False))
    seconds = time.perf_counter() - started
    wide, narrow = _rows(side_by_side), _rows(one_at_a_time)
    wide_median = median([r.seconds for r in side_by_side.ran] or [0.0])
    narrow_median = median([r.seconds for r in one_at_a_time.ran] or [0.0])
    total = len(side_by_side.ran)
    name = LOCAL_MODELS[args.model].title
    block = "\n".join(
        [
            f"Machine: {machine(load)}. {total} task requests, each `/task` in a new console channel, default"
            f" config, embedded {name} in-process; the same requests twice in this run, with"
            f" `[tasks] max_parallel_steps = 3` (the default) and `= 1`; {seconds:.0f} s in all.",
            "",
            "| metric | steps side by side (3) | one at a time (1) |",
            "| --- | --- | --- |",
            *(f"| {metric} | {wide[metric]} | {narrow[metric]} |" for metric in wide),
            f"| wall time per task, median: side by side / one at a time | {wide_median / narrow_median if narrow_median else 0:.2f} | |",
            f"| coordinator: task or chat read right ([tasks] auto_detect) | {side_by_side.coordinator_right}"
            f"/{len(COORDINATOR_LINES)} | |",
        ]
    )
    print(block)
    for side in (side_by_side, one_at_a_time):
        print(f"\nmax_parallel_steps = {side.parallel}:")
        for r in side.ran:
            titles = " | ".join(f"{s.title} [{s.capability}] {s.status}" for s in r.plan.steps) if r.plan else "-"
            print(f"  {r.status:10} {r.seconds:5.0f} s {r.request!r}: {titles} attempts={r.attempts}")
            plan = r.plan
            for step in plan.steps if plan else ():
                if (
                    plan
                    and step.status == "completed"
                    and (why := copied_result(step.result_summary, r.request, plan, step.id))
                ):
                    print(f"    step {step.id} completed by a copy ({why}): {step.result_summary!r}")
    print("\nTranscript of the first completed task (steps side by side):\n" + "\n".join(side_by_side.transcript))
    if not args.no_docs:
        rewrite_block(block, name="tasks")
        rewrite_block("```text\n" + "\n".join(side_by_side.transcript) + "\n```", name="task-transcript")


if __name__ == "__main__":
    main()
