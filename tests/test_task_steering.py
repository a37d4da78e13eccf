"""People steering a task in the real console bot (scripted model): a step that waits for its
action's approval, pause and resume across a restart, takeover and /task done, cancel, refusals,
and a step cut short by SIGKILL that is neither posted twice nor lost."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.inbound import Inbound
from graph.models.scripted import ScriptedModels
from personas import Persona
from storage import channels, tasks
from storage.records import LineKind
from tests.conftest import run_console, write_config
from tests.interactive_console import InteractiveConsole
from tests.recording_port import RecordingPort
from tests.test_tasks import REQUEST, plan_blocks, stored_tasks

ACT = '!!act publish_post {"channel": "news", "text": "We launched!"}'
# Nova announces (her action waits for approval), Sage researches, Rex reviews: one after the other.
STEERED = f"/task Announce the launch; research the reactions; review them {ACT}"


def spoken(transcript: str, names: Sequence[str] = ("Nova", "Sage", "Rex")) -> list[str]:
    """Who posted, in order (personas' lines in the channel, not their posts elsewhere)."""
    return [
        line.split("]")[0][1:] for line in transcript.splitlines() if line.startswith(tuple(f"[{n}] " for n in names))
    ]


def test_a_step_waits_for_its_approval_and_a_rejection_of_a_required_step_fails_the_task(tmp_path: Path) -> None:
    transcript = run_console(
        write_config(tmp_path),
        f"/task Announce the launch; review it {ACT}\n"
        "/task status\n"
        "/reject 1 not today\n"
        f"/task Announce the beta; review it {ACT}\n"
        "/approve 2\n",
    )
    first, second = transcript.split("[you] /task Announce the beta", 1)
    waiting, rejected = first.split("[you] /reject 1 not today", 1)
    assert [
        "Task #1: Announce the launch (running)",
        "[>] 1. Announce the launch — Nova: waiting for approval #1",
        "[ ] 2. review it — Rex (after 1)",
    ] in plan_blocks(waiting)
    assert spoken(waiting) == ["Nova"]  # the next step does not start while the approval waits
    final = plan_blocks(rejected)[-1]
    assert final == [
        "Task #1: Announce the launch (failed)",
        "[!] 1. Announce the launch — Nova: approval #1: publish_post: Rejected by you: not today",
        "[-] 2. review it — Rex (after 1): step 1 did not finish",
        "Stopped: required step 1 was rejected (approval #1: publish_post: Rejected by you: not today)."
        " 0 of 2 steps completed, 1 failed, 1 blocked.",
    ]
    assert "[Rex]" not in rejected

    before, after = second.split("[you] /approve 2", 1)
    assert spoken(before) == ["Nova"] and "[Nova in #news] We launched!" not in before
    assert after.index("[Nova in #news] We launched!") < after.index("[Rex] ")  # Rex starts after the decision
    done = plan_blocks(after)[-1]
    assert done[1].startswith("[x] 1. Announce the beta — Nova: ")
    assert done[1].endswith("(publish_post: Approved by you, executed: posted in #news)")
    assert done[-1] == "Done: all 2 steps completed."


def test_a_paused_task_stays_paused_across_a_restart_and_only_its_requester_or_an_approver_steers_it(
    tmp_path: Path,
) -> None:
    def as_user(user: str) -> Path:
        return write_config(tmp_path, {"bot": {"console_user": user}, "approvals": {"approvers": {"console": ["bea"]}}})

    started = run_console(as_user("ana"), f"{STEERED}\n/task pause\n")
    assert "[system] Task #1 pauses: the current step finishes, no new one starts until /task resume." in started
    assert plan_blocks(started)[-1][:2] == [
        "Task #1: Announce the launch (paused by ana)",
        "[>] 1. Announce the launch — Nova: waiting for approval #1",
    ]

    stranger = run_console(as_user("cy"), "/task resume\n/task takeover\n/task done 2\n/task cancel\n/task pause\n")
    assert [line for line in stranger.splitlines() if line.startswith("[system] Only")] == [
        f"[system] Only the task's requester or an approver can {verb} task #1."
        for verb in ("resume", "take over", "finish steps of", "cancel", "pause")
    ]
    assert plan_blocks(stranger)[-1][0] == "Task #1: Announce the launch (paused by ana)"  # after the restart

    approver = run_console(as_user("bea"), "/approve 1\n/task status\n/task resume\n")
    approved, resumed = approver.split("[bea] /task resume", 1)
    assert spoken(approved) == ["Nova"]  # her follow-up to the decision; Sage's step does not start
    assert "[system] [x] 1. Announce the launch — Nova: " in approved
    assert "[system] [ ] 2. research the reactions — Sage (after 1)" in approved
    assert spoken(resumed) == ["Sage", "Rex", "Rex"]  # two steps, then Rex's answer
    assert plan_blocks(resumed)[-1][0] == "Task #1: Announce the launch (completed)"
    # Resumed, the planner checked the rest of the plan once (it still fitted: nothing changed).
    [task] = stored_tasks(tmp_path)
    assert json.loads(task["plan"])["auto_replans"] == 1 and "Plan changed" not in resumed


def test_a_person_takes_over_the_remaining_steps_and_finishes_them_and_cancel_rejects_pending_approvals(
    tmp_path: Path,
) -> None:
    transcript = run_console(
        write_config(tmp_path),
        f"{STEERED}\n/task takeover I know the reactions already\n/approve 1\n/task done 2 Found three reactions\n"
        "/task done 3\n"
        f"/task Announce the beta; review it {ACT}\n/task cancel the beta slipped\n/approvals\n",
    )
    taken, cancelled = transcript.split("[you] /task Announce the beta", 1)
    context = taken.split("[you] /task takeover I know the reactions already\n", 1)[1].split("[you] /approve 1")[0]
    assert context.splitlines()[:5] == [
        f"[system] You have task #1 now. The request: {STEERED.removeprefix('/task ')}",
        "[system] Under way: 1. Announce the launch (Nova finishes it)",
        "[system] Left to you (/task done N [result] as you finish each):",
        "[system] - 2. research the reactions (after 1): research the reactions",
        "[system] - 3. review them (after 2): review them",
    ]
    assert plan_blocks(context)[-1] == [
        "Task #1: Announce the launch (taken over by you)",
        "[>] 1. Announce the launch — Nova: waiting for approval #1",
        "[ ] 2. research the reactions — with you (after 1)",
        "[ ] 3. review them — with you (after 2)",
    ]
    assert "[Sage]" not in taken and "[Rex]" not in taken  # no step went to a persona after the takeover
    assert "[system] Step 2 of task #1 is marked done by you." in taken
    final = plan_blocks(taken)[-1]
    assert final[0] == "Task #1: Announce the launch (completed)"
    assert final[2:4] == [
        "[x] 2. research the reactions — you (after 1): Found three reactions",
        "[x] 3. review them — you (after 2): done by you",
    ]
    assert final[-1] == "Done: all 3 steps completed. Who did what: Nova 1; you 2, 3."

    assert "[system] Task #2 is cancelled (the beta slipped). Rejected its pending approvals: #2." in cancelled
    assert "[action 2] rejected by you: the beta slipped" in cancelled  # on the request, as any rejection
    assert "[Nova in #news]" not in cancelled  # the rejected action never ran
    assert plan_blocks(cancelled)[-1][-1] == (
        "Cancelled by you: the beta slipped. Its pending approvals are rejected: #2. 0 of 2 steps completed, 1 failed."
    )
    assert "[system] Task #2: Cancelled by you: the beta slipped." in cancelled
    assert cancelled.rstrip().endswith("[system] No approvals are pending here.")
    assert [t["status"] for t in stored_tasks(tmp_path)] == ["completed", "stopped"]


def test_a_step_cut_short_by_sigkill_after_it_posted_is_not_posted_again_and_the_task_finishes(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    console.type(REQUEST)
    console.wait_for("[Sage] ")  # Sage's step has posted; its result is not checkpointed yet
    console.kill()
    before = "\n".join(console.lines)

    after = run_console(config, "/task status\n")
    assert spoken(before) == ["Sage"]
    assert spoken(after) == ["Nova", "Rex", "Rex"]  # Sage's step is never run, nor posted, again; Rex answers
    final = plan_blocks(after)[-1]
    assert final[0] == "Task #1: Research three venues (completed)"
    assert [line[:4] for line in final[1:4]] == ["[x] "] * 3
    [task] = stored_tasks(tmp_path)
    assert task["status"] == "completed"


class HangsAfterPosting(RecordingPort):
    """A port whose first post of `persona` is recorded (the platform has it) and then never returns,
    so a stop cuts the step short after it posted."""

    def __init__(self, persona: str) -> None:
        super().__init__()
        self.persona = persona
        self.hanging = asyncio.Event()

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        await super().post(channel_key, persona, text, thread)
        if persona.id == self.persona and not self.hanging.is_set():
            self.hanging.set()
            await asyncio.Event().wait()


class CountingTurns(ScriptedModels):
    def __init__(self) -> None:
        super().__init__()
        self.turns: list[str] = []

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> Any:
        self.turns.append(persona.id)
        return super().persona_model(persona, other_names, addressed=addressed)


async def test_a_step_stopped_after_it_posted_takes_its_committed_answer_instead_of_running_again(
    open_test_app,
) -> None:
    key = "console:general"
    port = HangsAfterPosting("nova")
    first = CountingTurns()
    async with open_test_app(models=first, outbound=port) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite; review it"))
        await asyncio.wait_for(port.hanging.wait(), 60)
        await app.service.drain(0)  # stopped inside Nova's step, after her post
        lines = await app.db.fetch_all("SELECT author_id FROM lines WHERE kind = ?", (LineKind.PERSONA.value,))
    assert first.turns == ["sage", "nova"] and [r["author_id"] for r in lines] == ["sage", "nova"]

    second = CountingTurns()
    async with open_test_app(models=second, outbound=port) as app:
        await app.service.wait_idle()
        task = await tasks.latest(app.db, key)
    assert second.turns == ["rex", "rex"]  # Nova's step took the answer she had posted; then Rex's answer
    assert [post[1] for post in port.posts] == ["sage", "nova", "rex", "rex"]  # each step posted once
    assert task is not None and task.status == "completed"
    assert port.plans["plan-1"].splitlines()[2].startswith("[x] 2. write the invite — Nova (after 1): ")


async def test_a_step_begun_before_is_found_by_its_number_attempt_and_note_each_step_on_its_own(app: Any) -> None:
    await channels.ensure_channel(app.db, "console:general", participants=["sage", "nova"], moderated=False)
    task = await tasks.start(app.db, "console:general", None, "Research venues", "u1", "Ana")
    assert task is not None
    research = "Task #1 (Venues), step 1 of 2. Ana: research"
    note, again = await tasks.begin_step(app.db, task.id, 1, 0, 1, "sage", research, "{}")
    assert not again
    # A second step begun meanwhile (side by side) has its own record: the first is still found.
    other, _ = await tasks.begin_step(
        app.db, task.id, 2, 0, 1, "nova", "Task #1 (Venues), step 2 of 2. Ana: write", "{}"
    )
    assert await tasks.begin_step(app.db, task.id, 1, 0, 1, "sage", research, "{}") == (note, True)
    # Its next attempt, and a replan's new step 1 (another revision), each get a note of their own.
    retried, again = await tasks.begin_step(app.db, task.id, 1, 0, 2, "sage", research, "{}")
    assert retried not in (note, other) and not again
    renumbered, again = await tasks.begin_step(app.db, task.id, 1, 1, 1, "nova", research, "{}")
    assert renumbered != retried and not again
    await tasks.end_step(app.db, task.id, 1, 1, 1, '{"ended": true}')
    records = {r.step_id: r for r in await tasks.step_records(app.db, task.id)}
    assert (records[1].finished, records[1].step, records[1].note_line) == (True, '{"ended": true}', renumbered)
    assert (records[2].finished, records[2].note_line) == (False, other)
