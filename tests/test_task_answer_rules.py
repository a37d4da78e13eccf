"""The rules of a task's results and answer, as pure functions: a rejected optional step is skipped
and a rejected required one fails the task (graph/tasks.py), each result kept whole up to its
bound, who writes the answer and what its note holds (graph/task_answer.py)."""

from __future__ import annotations

from graph import planner
from graph.settings import EngineSettings
from graph.task_answer import (
    answer_due,
    answer_note,
    bounded,
    integrator,
    result_limit,
    step_inputs,
    with_outcomes,
)
from graph.task_flow import TaskState, next_move
from graph.task_schedule import all_completed, too_many_failed
from graph.task_text import outcome_note, render_plan
from graph.tasks import (
    Ended,
    Plan,
    Step,
    after_approvals,
    next_runnable,
    parse_plan,
    rejected_required,
    with_step,
    with_waiting,
)
from personas import load_personas
from storage.task_artifacts import Artifact

PERSONAS = load_personas()
NAMES = {p.id: p.display_name for p in PERSONAS.values()}
REJECTED = Ended(7, "rejected", "publish_post: Rejected by Bea: not today")
LONG = "The lakeside hall seats 40, costs 900 euros, has parking; the old mill seats 60 but has no lift; " * 3


def step(id: int, depends_on: list[int] | None = None, **changes: object) -> Step:
    return Step(
        id=id, title=f"step {id}", instruction=f"do {id}", capability="writing", depends_on=depends_on or [], **changes
    )


def waiting_on(work: Plan, step_id: int) -> Plan:
    return with_waiting(with_step(work, step_id, "in_progress"), step_id, ["approval:b1"], "I drafted the post.")


def test_the_planner_marks_steps_optional_and_a_step_is_required_unless_it_says_so() -> None:
    schema = planner.plan_schema(["writing"], 4)
    assert schema["properties"]["steps"]["items"]["properties"]["optional"] == {"type": "boolean"}
    assert "optional" in schema["properties"]["steps"]["items"]["required"]
    assert "optional (true only for a step the task can do without" in planner.planner_system({"writing": ["Nova"]}, 4)
    parsed = parse_plan(
        '{"title": "Launch", "steps": ['
        '{"id": 1, "title": "Post", "instruction": "Post it", "capability": "writing", "depends_on": [], "optional": true},'
        '{"id": 2, "title": "Mail", "instruction": "Mail it", "capability": "writing", "depends_on": [1]}]}'
    )
    assert isinstance(parsed, Plan) and [s.optional for s in parsed.steps] == [True, False]


def test_a_rejected_optional_step_is_skipped_and_the_steps_after_it_run() -> None:
    work = waiting_on(Plan(title="Launch", steps=[step(1, optional=True), step(2, [1]), step(3, [2])]), 1)
    skipped = after_approvals(work, 1, [REJECTED])
    assert [s.status for s in skipped.steps] == ["skipped", "pending", "pending"]
    assert (
        skipped.steps[0].result_summary == "skipped (optional): approval #7: publish_post: Rejected by Bea: not today"
    )
    assert next_runnable(skipped) == skipped.steps[1]  # its dependent runs
    assert rejected_required(skipped) is None and not too_many_failed(skipped)
    lines = render_plan(1, skipped, "running", NAMES).splitlines()
    assert (
        lines[1] == "[~] 1. step 1 — nobody: skipped (optional): approval #7: publish_post: Rejected by Bea: not today"
    )
    done = with_step(with_step(skipped, 2, "completed", "mailed"), 3, "completed", "filed")
    assert all_completed(done) and outcome_note(done) == "Done: 2 of 3 steps completed, 1 optional skipped."


def test_a_rejected_required_step_fails_the_task_and_other_ends_only_fail_the_step() -> None:
    work = waiting_on(Plan(title="Launch", steps=[step(1), step(2, [1]), step(3), step(4), step(5)]), 1)
    refused = after_approvals(work, 1, [REJECTED])
    assert [s.status for s in refused.steps] == ["failed", "blocked", "pending", "pending", "pending"]
    assert rejected_required(refused) == refused.steps[0] and not too_many_failed(refused)
    # A rejection among executed calls still rejects the step.
    executed = Ended(6, "executed", "note_to: sent")
    assert rejected_required(after_approvals(work, 1, [executed, REJECTED])) is not None
    # Expired, failed or unknown: the step fails; whether the task goes on is its threshold's business.
    timed_out = after_approvals(work, 1, [Ended(7, "expired", "publish_post: Rejected: timed out")])
    assert timed_out.steps[0].status == "failed" and rejected_required(timed_out) is None
    optional_expired = waiting_on(Plan(title="Launch", steps=[step(1, optional=True)]), 1)
    assert after_approvals(optional_expired, 1, [Ended(7, "expired", "timed out")]).steps[0].status == "failed"

    base = TaskState(
        task_id=1,
        channel_key="console:t",
        thread=None,
        request="r",
        author_name="Ana",
        plan=refused.model_dump(),
        status="running",
        note="",
        instruction="",
        stop=False,
        new_batches=[],
        paused_by=None,
        taken_by=None,
        cancelled_by=None,
        cancel_reason="",
        handed_in=[],
    )
    assert next_move(base) == "finish"  # steps 3 to 5 could still run: the rejection ends the task
    timed = {**base, "plan": timed_out.model_dump()}
    assert next_move(timed) == "replan"  # type: ignore[arg-type]  # a step failed: the planner checks the rest
    assert next_move(timed, EngineSettings(max_replans=0)) == "step"  # type: ignore[arg-type]  # then others run


def test_a_result_is_kept_whole_up_to_its_bound_and_then_cut_with_a_note() -> None:
    assert bounded(LONG, 4000) == LONG.strip()
    cut = bounded(LONG, 200)
    assert len(cut) <= 200 and cut.endswith(" … [cut at 200 characters]") and LONG.startswith(cut[:150])
    ran = [Ended(7, "executed", "publish_post: posted in #news")]
    assert with_outcomes("I drafted the post.", ran) == "I drafted the post.\n(publish_post: posted in #news)"
    assert with_outcomes(with_outcomes("I drafted the post.", ran), ran) == with_outcomes("I drafted the post.", ran)


def test_a_step_gets_the_whole_results_of_the_steps_it_depends_on() -> None:
    work = Plan(title="Launch", steps=[step(1, assignee="sage"), step(2, assignee="nova"), step(3, [1, 2])])
    work = with_step(with_step(work, 1, "completed", "short"), 2, "skipped", "skipped (optional): approval #7")
    artifacts = {1: Artifact(1, "sage", LONG.strip())}
    assert step_inputs(work, work.steps[2], artifacts, NAMES) == [
        f"step 1 (Sage): {LONG.strip().rstrip('.')}",
        "step 2 was skipped (optional): approval #7",
    ]
    assert step_inputs(work, work.steps[2], {}, NAMES)[0] == "step 1 (Sage): short"  # no artifact: its summary


def test_the_answer_is_written_by_the_configured_persona_else_who_did_most() -> None:
    work = Plan(
        title="Launch",
        steps=[
            step(1, assignee="sage"),
            step(2, assignee="nova"),
            step(3, assignee="sage"),
            step(4, assignee="rex"),
            step(5, assignee="nova", done_by="Ana"),
        ],
    )
    for number in (1, 2, 3, 4, 5):
        work = with_step(work, number, "completed", "ok")
    assert integrator(work, ["nova", "sage", "rex"], "rex") == "rex"
    assert integrator(work, ["nova", "sage", "rex"], "pixel") == "sage"  # pixel is not here: most steps
    assert integrator(work, ["nova", "rex"]) == "rex"  # a tie: the later step's persona (step 5 was Ana's)
    people = with_step(Plan(title="x", steps=[step(1, assignee="sage", done_by="Ana")]), 1, "completed", "ok")
    assert integrator(people, ["nova", "sage"]) == "nova"  # nobody here did a step: the first present
    assert integrator(people, []) is None
    assert answer_due(work, cancelled=False) and not answer_due(work, cancelled=True)
    assert not answer_due(Plan(title="x", steps=[step(1, status="failed")]), cancelled=False)
    assert not answer_due(None, cancelled=False)


def test_the_answer_note_holds_the_request_every_whole_result_and_what_failed() -> None:
    work = Plan(
        title="Launch",
        steps=[step(1, assignee="sage"), step(2, [1], assignee="nova"), step(3, assignee="rex", optional=True)],
    )
    work = with_step(with_step(work, 1, "completed", "short"), 2, "failed", "model error")
    work = with_step(work, 3, "skipped", "skipped (optional): approval #7")
    note, ask = answer_note(
        4, "Plan the launch", "Ana", work, "Stopped.", {1: Artifact(1, "sage", LONG.strip())}, NAMES, "sage"
    )
    assert note.splitlines() == [
        "Task #4 (Launch) has ended: Stopped.",
        "The request (Ana): Plan the launch",
        "What was done:",
        f"- step 1, step 1 (Sage): {LONG.strip()}",
        "What did not get done:",
        "- step 2, step 2 (failed: model error)",
        "- step 3, step 3 (skipped: skipped (optional): approval #7)",
        f"Ana: {ask}",
    ]
    assert ask == "Sage, give me the task's answer: the result itself, what was done and anything that failed."


def test_results_share_half_the_prompts_token_budget_and_each_one_over_its_share_is_cut() -> None:
    assert result_limit(3000, 3) == 2000  # 1,500 tokens of 3,000, four characters a token, three ways
    assert result_limit(3000, 1) == 6000 and result_limit(200, 8) == 200  # never cut to nothing
    work = Plan(title="Launch", steps=[step(1, assignee="sage"), step(2, [1], assignee="nova")])
    work = with_step(work, 1, "completed", "short")
    whole = "x" * 3000
    [cut] = step_inputs(work, work.steps[1], {1: Artifact(1, "sage", whole)}, NAMES, token_budget=1000)
    assert cut.startswith("step 1 (Sage): xxx") and cut.endswith(" … [cut at 2000 characters]")
    assert len(cut) < len(whole)
