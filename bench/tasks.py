"""Task mode on the embedded Gemma 3 270M: how often its plans are usable and its tasks finish, and
how well the coordinator tells a task from chat. Through the whole app (console port, default
config with the personas' capabilities, local provider), one new channel per task.

Run from the repository root: python bench/tasks.py [--tasks N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import machine, rewrite_block  # noqa: E402
from bot.app import open_app  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.console import ConsolePort  # noqa: E402
from bot.inbound import Inbound  # noqa: E402
from graph.tasks import Plan, copied_result  # noqa: E402
from storage import tasks as stored_tasks  # noqa: E402

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


def _config(data_dir: Path) -> Path:
    text = (ROOT / "config.toml").read_text(encoding="utf-8")
    text = text.replace('data_dir = "data"', f'data_dir = "{data_dir / "data"}"')
    text = text.replace('personas_dir = "personas"', f'personas_dir = "{ROOT / "personas"}"')
    path = data_dir / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def run_tasks(count: int, data_dir: Path) -> tuple[list[tuple[str, str, Plan | None]], list[str], int]:
    """Each request as /task in a new channel: (request, how it ended, its final plan); the transcript
    of the first task that completed (of the first task when none did)."""
    transcript: list[str] = []
    results: list[tuple[str, str, Plan | None]] = []
    first_transcript: list[str] = []
    coordinator_right = 0
    async with open_app(load_config(_config(data_dir)), ConsolePort(transcript.append), environ={}) as app:
        for number in range(count):
            key = f"console:task-{number}"
            request = REQUESTS[number % len(REQUESTS)]
            before = len(transcript)
            await app.service.handle(Inbound(key, "u1", "Ana", f"/task {request}", event_id=f"task-{number}"))
            await app.service.wait_idle(key)
            record = await stored_tasks.latest(app.db, key)
            plan = Plan.model_validate_json(record.plan) if record and record.plan else None
            status = record.status if record else "not started"
            if status == "running" and plan is not None and any(step.batches for step in plan.steps):
                status = "waiting for approval"  # a step's action waits for a person, as it should
            results.append((request, status, plan))
            if number == 0 or (results[-1][1] == "completed" and not any(r[1] == "completed" for r in results[:-1])):
                first_transcript = [f"Ana: /task {request}", *transcript[before:]]
        for line, is_task in COORDINATOR_LINES:
            coordinator_right += await app.engine.tasks.is_task(line, "Ana") == is_task
    return results, first_transcript, coordinator_right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=len(REQUESTS))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        results, transcript, coordinator_right = asyncio.run(run_tasks(args.tasks, Path(scratch)))
    seconds = time.perf_counter() - started
    endings = Counter(status for _, status, _ in results)
    planned = [plan for _, _, plan in results if plan is not None]
    steps = [step for plan in planned for step in plan.steps]
    done_steps = sum(step.status == "completed" for step in steps)
    # The guard's own test on what was completed: a step whose result repeats the request, its step
    # or another step's result should have failed instead.
    done_by_copy = sum(
        copied_result(step.result_summary, request, plan, step.id) is not None
        for request, _, plan in results
        if plan is not None
        for step in plan.steps
        if step.status == "completed"
    )
    failed_as_copy = sum(step.status == "failed" and step.result_summary.startswith("it ") for step in steps)
    multi_step = sum(len(plan.steps) > 1 for plan in planned)
    total = len(results)
    block = "\n".join(
        [
            f"Machine: {machine(load)}. {total} task requests, each `/task` in a new console channel, default config,"
            f" embedded Gemma 3 270M, {seconds:.0f} s.",
            "",
            "| metric | measured |",
            "| --- | --- |",
            f"| a valid plan (after at most one re-ask) | {len(planned)}/{total} |",
            f"| plans of more than one step | {multi_step}/{len(planned)} |",
            f"| steps answered (completed) | {done_steps}/{len(steps)} |",
            f"| steps completed by a copy (of the request, the step or another result) | {done_by_copy} |",
            f"| steps failed for repeating or copying | {failed_as_copy}/{len(steps)} |",
            f"| tasks finished (every step completed) | {endings['completed']}/{total} |",
            f"| tasks ended otherwise | {', '.join(f'{k} {v}' for k, v in sorted(endings.items()) if k != 'completed') or 'none'} |",
            f"| coordinator: task or chat read right ([tasks] auto_detect) | {coordinator_right}/{len(COORDINATOR_LINES)} |",
        ]
    )
    print(block)
    for request, status, plan in results:
        titles = " | ".join(f"{s.title} [{s.capability}] {s.status}" for s in plan.steps) if plan else "-"
        print(f"  {status:10} {request!r}: {titles}")
        for step in plan.steps if plan else ():
            if step.status == "completed" and (why := copied_result(step.result_summary, request, plan, step.id)):
                print(f"    step {step.id} completed by a copy ({why}): {step.result_summary!r}")
    print("\nTranscript of the first completed task:\n" + "\n".join(transcript))
    rewrite_block(block, name="tasks")
    rewrite_block("```text\n" + "\n".join(transcript) + "\n```", name="task-transcript")


if __name__ == "__main__":
    main()
