"""Task mode in the real console bot (scripted model): a task planned, assigned by capability, run
step by step with its plan block reprinted, replanned, stopped, failing, and resumed after SIGKILL."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from bot.inbound import Inbound
from graph.models.base import ChatRunnable
from graph.models.scripted import ScriptedModels
from graph.tasks import summary_of
from personas import Persona
from storage import inbox, rounds, tasks
from tests.conftest import run_console, write_config
from tests.fake_models import CallbackChatModel
from tests.interactive_console import InteractiveConsole
from tests.recording_port import RecordingPort


def plan_blocks(transcript: str) -> list[list[str]]:
    """Each printing of the plan block: its lines after the [plan] / [plan updated] line."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in transcript.splitlines():
        if line in ("[plan]", "[plan updated]"):
            current = []
            blocks.append(current)
        elif current is not None and (
            line.startswith(("Task #", "[ ] ", "[>] ", "[x] ", "[-] ", "[!] ", "[~] ")) or not line.startswith("[")
        ):
            current.append(line)
        else:
            current = None
    return blocks


def plan_json(steps: list[tuple[int, str, list[int]]], title: str = "Launch") -> str:
    return json.dumps(
        {
            "title": title,
            "steps": [
                {"id": i, "title": f"Part {i}", "instruction": f"Do part {i}", "capability": c, "depends_on": d}
                for i, c, d in steps
            ],
        },
        separators=(",", ":"),
    )


def stored_tasks(tmp_path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM tasks ORDER BY id")]


# Sage's step takes 4 s (!!slow), the time a line typed meanwhile has to reach the bot during the task.
REQUEST = "/task Research three venues; write the invitation; review it for risks !!slow 4"


def test_a_task_is_planned_assigned_by_capability_replanned_and_finished(tmp_path: Path) -> None:
    console = InteractiveConsole(write_config(tmp_path))
    console.type(REQUEST)
    console.wait_for(lambda line: line.startswith("[>] 1."))  # Sage's step runs (slowly)
    console.type("/task replan write a short note instead; review the note")
    console.wait_for(lambda line: line.startswith("[system] Task #1 is replanned"))
    transcript = console.finish()

    blocks = plan_blocks(transcript)
    assert transcript.count("[plan]\n") == 1  # posted once, then only edited
    assert blocks[1] == [
        "Task #1: Research three venues (running)",
        "[ ] 1. Research three venues — Sage",
        "[ ] 2. write the invitation — Nova (after 1)",
        "[ ] 3. review it for risks — Rex (after 2)",
    ]
    # After Sage's step the plan is revised: step 1 is kept with its result, the rest replaced.
    replanned = next(b for b in blocks if "write a short note instead" in "\n".join(b))
    assert replanned[0] == "Task #1: write a short note instead (running)"
    assert replanned[1].startswith("[x] 1. Research three venues — Sage: Let us slow down")
    assert replanned[2:] == ["[ ] 2. write a short note instead — Nova", "[ ] 3. review the note — Rex (after 2)"]
    final = blocks[-1]
    assert final[0] == "Task #1: write a short note instead (completed)"
    assert [line[:4] for line in final[1:4]] == ["[x] ", "[x] ", "[x] "]
    assert final[-1] == "Done: all 3 steps completed."
    # Each step is a persona turn, posted in the channel in plan order; then Rex (the later of three
    # single steps) writes the task's answer, its last message.
    spoken = [
        line.split("]")[0][1:] for line in transcript.splitlines() if line.startswith(("[Sage] ", "[Nova] ", "[Rex] "))
    ]
    assert spoken == ["Sage", "Nova", "Rex", "Rex"]
    assert "give me the task's answer" in [line for line in transcript.splitlines() if line.startswith("[Rex] ")][-1]
    assert "Task #1: Done" not in transcript  # the answer takes the place of the "Done" notice
    assert "review it for risks" not in "\n".join(final)


def test_task_status_and_stop(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type("/task status")
    console.wait_for(lambda line: "No task here yet" in line)
    console.type(REQUEST)
    console.wait_for(lambda line: line.startswith("[>] 1."))
    console.type("/task stop")
    console.type("/task Something else entirely")
    console.wait_for(lambda line: line.startswith("[system] Task #1 stops before its next step"))
    console.wait_for(lambda line: "A task is already running here" in line)
    console.wait_for(lambda line: line.startswith("[system] Task #1: Stopped"))
    console.wait_for(lambda line: line.startswith("[Sage] ") and "give me the task's answer" in line)
    console.type("/task status")
    console.type("/task stop")
    transcript = console.finish()

    assert "[system] Task #1: Stopped (/task stop). 1 of 3 steps completed, 0 failed." in transcript
    status = transcript.split("[system] Task #1: Research three venues (stopped)", 1)[1].splitlines()
    assert status[1].startswith("[system] [x] 1. Research three venues — Sage: ")
    assert status[2:4] == [
        "[system] [ ] 2. write the invitation — Nova (after 1)",
        "[system] [ ] 3. review it for risks — Rex (after 2)",
    ]
    assert "[system] No task is running here." in transcript
    assert "[Nova]" not in transcript  # nothing ran after the stop
    [task] = stored_tasks(tmp_path)
    assert task["status"] == "stopped" and task["shown_as"] == "console:general:plan"


def test_a_task_waits_while_replies_are_paused_and_goes_on_when_they_resume(tmp_path: Path) -> None:
    console = InteractiveConsole(write_config(tmp_path))
    console.type(REQUEST)
    console.wait_for(lambda line: line.startswith("[>] 1."))
    console.type("/moderate pause")
    console.wait_for(lambda line: line.startswith("[system] Task #1 waits while replies are paused"))
    console.type("/task status")
    console.wait_for(lambda line: line.startswith("[system] [ ] 3."))
    console.type("/moderate resume")
    transcript = console.finish()

    waiting = transcript.split("[system] Task #1 waits while replies are paused", 1)[1]
    before_resume = waiting.split("Replies resumed", 1)[0]
    assert "[Nova]" not in before_resume and "[Rex]" not in before_resume  # no step ran while paused
    assert "Task #1: Research three venues (completed)" in waiting.split("Replies resumed", 1)[1]


def test_an_action_in_a_step_goes_through_the_approval_policy(tmp_path: Path) -> None:
    act = '!!act publish_post {"channel": "news", "text": "We launched!"}'
    transcript = run_console(write_config(tmp_path), f"/task Announce the launch {act}\n/approve 1\n")
    lines = transcript.splitlines()
    request = next(i for i, line in enumerate(lines) if line.startswith("[approval 1] "))
    assert lines[request].startswith("[approval 1] Nova wants publish_post(channel='news', text='We launched!')")
    assert "[Nova in #news] We launched!" not in "\n".join(lines[:request])  # nothing ran before approval
    assert "Task #1: Announce the launch (completed)" in transcript  # the task does not wait for it
    assert "[Nova in #news] We launched!" in transcript.split("[you] /approve 1", 1)[1]


def test_an_invalid_plan_goes_back_once_then_the_task_stops_with_a_clear_message(tmp_path: Path) -> None:
    unknown = plan_json([(1, "juggling", [])])
    cycle = plan_json([(1, "research", [2]), (2, "writing", [1])])
    valid = plan_json([(1, "research", []), (2, "writing", [1])])
    transcript = run_console(
        write_config(tmp_path),
        f"/task Fixed on the second try !!plan {unknown} !!plan {valid}\n"
        f"/task Invalid twice !!plan {unknown} !!plan {cycle}\n"
        "/task status\n",
    )
    assert "Task #1: Launch (completed)" in transcript
    assert (
        "[system] Task #2 stopped: the plan was invalid twice (steps 1 -> 2 -> 1 depend on each other in a cycle)."
        in transcript
    )
    assert transcript.rstrip().endswith(
        "[system] Task #2 (failed)\n[system] Task stopped: the plan was invalid twice"
        " (steps 1 -> 2 -> 1 depend on each other in a cycle)."
    )


def test_more_than_half_of_the_steps_failing_stops_the_task_with_a_summary(tmp_path: Path) -> None:
    four = plan_json([(1, "research", []), (2, "writing", []), (3, "review", []), (4, "research", [])])
    # One step at a time, each tried three times ([tasks] step_attempts), no replan in between (its
    # planner would take failures too); the channel never pauses.
    config = write_config(
        tmp_path,
        {"tasks": {"max_parallel_steps": 1, "max_replans": 0}, "approvals": {"failures_before_pause": 0}},
    )
    transcript = run_console(config, f"/task Four parts !!plan {four} !!fail 9\n")
    assert transcript.count("[system] Sage could not answer (model error) and was skipped.") == 3
    assert transcript.count("could not answer") == 9
    final = plan_blocks(transcript)[-1]
    assert final[0] == "Task #1: Launch (failed)"
    assert [line[:3] for line in final[1:5]] == ["[!]", "[!]", "[!]", "[ ]"]  # the fourth step never ran
    assert final[-1] == "Stopped: more than half of its steps failed. 0 of 4 steps completed, 3 failed."
    assert "[system] Task #1: Stopped: more than half of its steps failed." in transcript


def test_a_task_cut_short_by_sigkill_resumes_from_its_checkpoint_at_start_up(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for(lambda line: line.startswith("[>] 1."))
    console.kill()
    [task] = stored_tasks(tmp_path)
    assert task["status"] == "running"

    transcript = run_console(config, "/task status\n")
    assert "(planning)" not in transcript  # the plan came back from the checkpoint, not from a new plan
    assert "[plan]\n" not in transcript and "[plan updated]" in transcript  # the same message, edited
    final = plan_blocks(transcript)[-1]
    assert final[0] == "Task #1: Research three venues (completed)"
    assert [line[:4] for line in final[1:4]] == ["[x] "] * 3
    # The step the kill cut short runs again from its start; the others once each.
    spoken = [
        line.split("]")[0][1:] for line in transcript.splitlines() if line.startswith(("[Sage] ", "[Nova] ", "[Rex] "))
    ]
    assert spoken == ["Sage", "Nova", "Rex", "Rex"]  # then Rex's answer
    assert [task["status"] for task in stored_tasks(tmp_path)] == ["completed"]


def test_auto_detect_runs_a_line_the_coordinator_calls_a_task(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tasks": {"auto_detect": True}})
    transcript = run_console(config, "Hello everyone\nPlan the offsite; write the agenda !!task\n")
    lines = transcript.splitlines()
    chat = lines[
        lines.index("[you] Hello everyone") + 1 : lines.index("[you] Plan the offsite; write the agenda !!task")
    ]
    assert chat and not any(line.startswith("[plan") for line in chat)  # chat gets a round
    assert "Task #1: Plan the offsite (completed)" in transcript


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def test_a_task_is_stored_with_its_plan_and_message_on_both_backends(open_test_app, port: RecordingPort) -> None:
    key = "console:general"
    async with open_test_app() as app:
        reply = await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite"))
        assert reply is not None and reply.reply.startswith("Task #1 taken")
        await app.service.wait_idle()
        [task] = [await tasks.latest(app.db, key)]
        assert task is not None and (task.status, task.shown_as, task.request) == (
            "completed",
            "plan-1",
            "Research venues; write the invite",
        )
        assert task.plan is not None and [s["assignee"] for s in json.loads(task.plan)["steps"]] == ["sage", "nova"]
        assert port.plans["plan-1"].splitlines()[0] == "Task #1: Research venues (completed)"

        # One active task per channel; stop and replan requests wait for the supervisor.
        second = await tasks.start(app.db, key, None, "Another", "u1", "Ana")
        assert second is not None and await tasks.start(app.db, key, None, "A third", "u1", "Ana") is None
        assert [t.id for t in await tasks.unfinished(app.db)] == [second.id]
        assert await tasks.request_replan(app.db, second.id, "shorter")
        assert await tasks.request_stop(app.db, second.id)
        await tasks.clear_instruction(app.db, second.id, "shorter")
        stored = await tasks.get(app.db, second.id)
        assert stored is not None and stored.stop_requested and stored.instruction is None
        await tasks.save(app.db, second.id, status="stopped", plan=None, note="Stopped.")
        assert not await tasks.request_stop(app.db, second.id)  # no longer active


async def test_a_task_run_before_a_round_a_crash_cut_short_leaves_that_round_whole(
    open_test_app, port: RecordingPort
) -> None:
    """Start-up recovery runs tasks before the rounds a crash cut short: the task's turns must not
    count as that round's, or the round would go on as if someone had answered its message."""
    key = "console:general"
    async with open_test_app() as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "Morning, all."))
        await app.service.wait_idle()
        # A crash right after the next round began: its message left the inbox, no turn committed.
        await inbox.accept(app.db, None, key, "u1", "Ana", "Sage, which venue do you like best?")
        message = await inbox.oldest(app.db, key)
        assert message is not None
        await rounds.begin(app.db, message)
        await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite"))
        await app.service.wait_idle()
        assert (await tasks.latest(app.db, key)).status == "completed"
        assert await rounds.running(app.db, key) == (message, None)  # as the crash left it

        posted = len(port.posts)
        app.service.answer_waiting(key)
        await app.service.wait_idle()
        assert await rounds.running(app.db, key) is None
    assert "sage" in [persona for _, persona, _, _ in port.posts[posted:]]


class StepCounting(ScriptedModels):
    """The scripted double, counting persona turns; with `hang_for`, that persona's turn never ends."""

    def __init__(self, hang_for: str | None = None) -> None:
        super().__init__()
        self.turns: list[str] = []
        self.hang_for = hang_for
        self.hanging = asyncio.Event()

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        self.turns.append(persona.id)
        if persona.id != self.hang_for:
            return super().persona_model(persona, other_names, addressed=addressed)

        async def hang(speaker: str, messages: list[BaseMessage]) -> str:
            self.hanging.set()
            await asyncio.Event().wait()  # until the stop cancels it
            raise AssertionError("unreachable")

        return CallbackChatModel(speaker=persona.id, reply=hang)


async def test_a_task_stopped_mid_step_resumes_after_its_last_completed_step(
    open_test_app, port: RecordingPort
) -> None:
    key = "console:general"
    first = StepCounting(hang_for="nova")
    async with open_test_app(models=first) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite; review it"))
        await asyncio.wait_for(first.hanging.wait(), 30)
        await app.service.drain(0)  # a stop in the middle of Nova's step
    assert first.turns == ["sage", "nova"]
    assert port.plans["plan-1"].splitlines()[1:3] == [
        f"[x] 1. Research venues — Sage: {summary_of(port.posts[0][2])}",
        "[>] 2. write the invite — Nova (after 1)",
    ]

    second = StepCounting()
    async with open_test_app(models=second) as app:
        await app.service.wait_idle()
        task = await tasks.latest(app.db, key)
    assert second.turns == ["nova", "rex", "rex"]  # Sage's completed step is not done again; then Rex's answer
    assert task is not None and task.status == "completed" and list(port.plans) == ["plan-1"]  # the same message
    assert port.plans["plan-1"].splitlines()[0] == "Task #1: Research venues (completed)"
