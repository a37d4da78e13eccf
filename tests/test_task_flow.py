"""The supervisor running steps in the real console bot (scripted model): independent steps side by
side, a failed step tried again, the failure threshold of the task's kind, the planner's own replan
after a step failed for good, and SIGKILL while two steps run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import run_console, write_config
from tests.interactive_console import InteractiveConsole
from tests.test_task_steering import spoken
from tests.test_tasks import plan_blocks, plan_json, stored_tasks

TWO_THEN_ONE = plan_json([(1, "research", []), (2, "writing", []), (3, "review", [1, 2])])


def private_notes(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT text FROM lines WHERE text LIKE 'Task #%' ORDER BY id")]


def with_kind(plan: str, kind: str) -> str:
    return json.dumps(json.loads(plan) | {"kind": kind}, separators=(",", ":"))


def test_two_independent_steps_run_at_once_and_the_step_that_needs_both_waits_for_them(tmp_path: Path) -> None:
    # !!overlap 2: each of the next two persona calls waits until both are under way at once; calls
    # made one after the other would fail, and show "could not answer".
    transcript = run_console(write_config(tmp_path), f"/task Two at once !!plan {TWO_THEN_ONE} !!overlap 2\n")
    assert "could not answer" not in transcript
    blocks = plan_blocks(transcript)
    assert [
        "Task #1: Launch (running)",
        "[>] 1. Part 1 — Sage",
        "[>] 2. Part 2 — Nova",
        "[ ] 3. Part 3 — Rex (after 1, 2)",
    ] in blocks  # both in progress in one print, the third waiting for them
    said = spoken(transcript)  # then the task's answer (graph/task_answer.py)
    assert sorted(said[:2]) == ["Nova", "Sage"] and said[2] == "Rex"  # Rex only after both
    assert plan_blocks(transcript)[-1][-1] == "Done: all 3 steps completed."


def test_a_step_whose_first_two_calls_fail_is_tried_again_and_completes(tmp_path: Path) -> None:
    one = plan_json([(1, "research", []), (2, "writing", [1])])
    transcript = run_console(write_config(tmp_path), f"/task Retry !!plan {one} !!fail 2\n")
    assert transcript.count("[system] Sage could not answer (model error) and was skipped.") == 2
    assert spoken(transcript)[:2] == ["Sage", "Nova"]  # then the task's answer
    assert plan_blocks(transcript)[-1][-1] == "Done: all 2 steps completed."
    notes = [n for n in private_notes(tmp_path) if "step 1 of 2" in n]
    assert len(notes) == 3  # one note per attempt; the retries say why the last one failed
    assert "Your last try failed" not in notes[0]
    assert "Your last try failed: no usable answer (model error)." in notes[1]
    [task] = stored_tasks(tmp_path)
    assert [s["attempts"] for s in json.loads(task["plan"])["steps"]] == [3, 1]


def test_a_step_that_fails_three_times_fails_and_the_tasks_kind_decides_whether_the_task_does(
    tmp_path: Path,
) -> None:
    four = plan_json([(1, "research", []), (2, "writing", []), (3, "review", []), (4, "research", [])])
    outcomes, said = {}, {}
    for kind in ("writing", "research"):
        (tmp_path / kind).mkdir()
        # One step at a time, so that Sage's step 1 takes all three failures.
        config = write_config(tmp_path / kind, {"tasks": {"max_parallel_steps": 1}})
        transcript = run_console(config, f"/task Four parts !!plan {with_kind(four, kind)} !!fail 3\n")
        assert transcript.count("[system] Sage could not answer (model error) and was skipped.") == 3
        outcomes[kind], said[kind] = plan_blocks(transcript)[-1], spoken(transcript)
    # 1 of 4 steps lost is above a writing task's 20%: it stops there.
    assert outcomes["writing"][0] == "Task #1: Launch (failed)"
    assert outcomes["writing"][-1] == (
        "Stopped: more than 20% of its steps failed (the limit for a writing task). 0 of 4 steps completed, 1 failed."
    )
    assert said["writing"] == []
    # A research task may lose half: steps 2, 3 and 4 run on, and it completes.
    assert said["research"][:3] == ["Nova", "Rex", "Sage"]  # then the task's answer
    assert outcomes["research"][0] == "Task #1: Launch (completed)"
    assert outcomes["research"][-1] == "3 of 4 steps completed, 1 failed."
    assert outcomes["research"][1].startswith("[!] 1. Part 1 — Sage: no usable answer")


def test_a_step_failed_for_good_leads_to_one_automatic_replan_shown_as_an_edit_of_the_plan(tmp_path: Path) -> None:
    two = plan_json([(1, "research", []), (2, "writing", [1])])
    instead = json.dumps(
        {
            "title": "Launch",
            "kind": "writing",
            "steps": [
                {"id": 1, "title": "Write it anyway", "instruction": "Write the post", "capability": "writing"},
                {"id": 2, "title": "Check the post", "instruction": "Check it", "capability": "review"},
            ],
        },
        separators=(",", ":"),
    )
    transcript = run_console(write_config(tmp_path), f"/task Launch !!plan {two} !!fail 3 !!replan {instead}\n")
    assert transcript.count("[plan]\n") == 1  # one message, edited
    changed = [b for b in plan_blocks(transcript) if any(line.startswith("Plan changed:") for line in b)]
    assert changed[0][1:] == [
        "[ ] 1. Write it anyway — Nova",
        "[ ] 2. Check the post — Rex",
        "Plan changed: step 1 replaced by 1. Write it anyway; step 2 replaced by 2. Check the post.",
    ]
    assert spoken(transcript)[:2] == ["Nova", "Rex"]  # then the task's answer
    assert plan_blocks(transcript)[-1][-1] == "Done: all 2 steps completed."
    [task] = stored_tasks(tmp_path)
    assert json.loads(task["plan"])["auto_replans"] == 1 and task["status"] == "completed"


def test_sigkill_while_two_steps_run_each_finishes_once_after_the_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    console = InteractiveConsole(config)
    # The first of the two calls takes 8 s (!!slow): the other step posts while it runs.
    console.type(f"/task Two at once !!plan {TWO_THEN_ONE} !!slow 8")
    console.wait_for(lambda line: line.startswith("[>] 2."))  # both steps under way
    console.wait_for(lambda line: line.startswith(("[Sage] ", "[Nova] ")))  # one has posted, one runs
    console.kill()
    before = "\n".join(console.lines)
    assert len(spoken(before)) == 1

    after = run_console(config, "/task status\n")
    said = spoken(before) + spoken(after)  # the steps, then the task's answer (Rex's: the last step)
    assert sorted(said[:2]) == ["Nova", "Sage"] and said[2] == "Rex"
    assert (said.count("Nova"), said.count("Sage")) == (1, 1)  # each step posted once
    final = plan_blocks(after)[-1]
    assert final[0] == "Task #1: Launch (completed)"
    assert [line[:4] for line in final[1:4]] == ["[x] "] * 3
    [task] = stored_tasks(tmp_path)
    assert task["status"] == "completed"
