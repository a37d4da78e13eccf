"""The supervisor's scheduling rules (graph/task_schedule.py): which steps start side by side, how an
attempt ends (retried, failed, completed, waiting), the failure threshold by the task's kind, when
the planner checks a plan on its own, what a replan changed, and a crash's stored attempts taken in."""

from __future__ import annotations

import json

from graph import planner
from graph.task_schedule import (
    after_attempt,
    all_ended,
    checked,
    failure_rule,
    plan_change,
    recheck_reason,
    replan_due,
    revision_problem,
    started,
    steps_to_start,
    too_many_failed,
    with_records,
)
from graph.tasks import Ended, Plan, Step, after_approvals, merge_replan, parse_plan, with_step, with_waiting
from storage.tasks import StepRecord

THRESHOLDS = {"research": 0.5, "writing": 0.2, "actions": 0.0}


def step(id: int, depends_on: list[int] | None = None, assignee: str | None = None, **changes: object) -> Step:
    return Step(
        id=id,
        title=f"step {id}",
        instruction=f"do {id}",
        capability="research",
        depends_on=depends_on or [],
        assignee=assignee,
        **changes,
    )


def titled(id: int, title: str) -> Step:
    return step(id).model_copy(update={"title": title})


def plan(*steps: Step, kind: str | None = None) -> Plan:
    return Plan(title="Launch", steps=list(steps), kind=kind)  # type: ignore[arg-type]


def test_independent_steps_start_together_up_to_the_limit_one_step_per_persona() -> None:
    work = plan(step(1, assignee="sage"), step(2, assignee="nova"), step(3, [1, 2], "rex"), step(4, assignee="rex"))
    assert [s.id for s in steps_to_start(work, 3)] == [1, 2, 4]
    assert [s.id for s in steps_to_start(work, 2)] == [1, 2]
    running = started(started(work, 1, "sage"), 2, "nova")
    assert [s.id for s in steps_to_start(running, 3)] == [4]  # one slot left; 3 waits for 1 and 2
    assert [s.id for s in steps_to_start(running, 2)] == []
    # A persona takes one step at a time: Sage's second ready step waits for her first.
    same = plan(step(1, assignee="sage"), step(2, assignee="sage"), step(3, assignee="nova"))
    assert [s.id for s in steps_to_start(same, 3)] == [1, 3]
    # The dependent step starts once both steps it needs are completed.
    both = with_step(with_step(running, 1, "completed", "a"), 2, "completed", "b")
    assert [s.id for s in steps_to_start(both, 3)] == [3]  # Rex has 3 and 4: one at a time


def test_a_failed_attempt_is_tried_again_with_why_until_the_attempts_are_spent() -> None:
    work = started(plan(step(1), step(2, [1])), 1, "sage")
    assert work.steps[0].status == "in_progress" and work.steps[0].attempts == 1
    once = after_attempt(work, 1, failure="no usable answer", result="", batches=[], step_attempts=3)
    assert (once.steps[0].status, once.steps[0].last_failure) == ("pending", "no usable answer")
    thrice = once
    for _ in range(2):
        thrice = after_attempt(started(thrice, 1, "sage"), 1, failure="model", result="", batches=[], step_attempts=3)
    assert thrice.steps[0].attempts == 3
    assert [s.status for s in thrice.steps] == ["failed", "blocked"]
    done = after_attempt(started(once, 1, "sage"), 1, failure=None, result="found it", batches=[], step_attempts=3)
    assert (done.steps[0].status, done.steps[0].result_summary, done.steps[0].attempts) == ("completed", "found it", 2)
    waits = after_attempt(work, 1, failure=None, result="asked", batches=["b1"], step_attempts=3)
    assert (waits.steps[0].status, waits.steps[0].batches) == ("in_progress", ["b1"])


def test_an_action_that_failed_is_tried_again_and_a_rejected_one_fails_the_step() -> None:
    work = with_waiting(started(plan(step(1)), 1, "rex"), 1, ["b"], "asked")
    failed = after_approvals(work, 1, [Ended(3, "failed", "publish_post: it failed")], 3)
    assert (failed.steps[0].status, failed.steps[0].batches) == ("pending", [])
    assert failed.steps[0].last_failure == "approval #3: publish_post: it failed"
    rejected = after_approvals(work, 1, [Ended(3, "rejected", "publish_post: rejected")], 3)
    assert rejected.steps[0].status == "failed"


def test_the_failure_threshold_follows_the_task_kind() -> None:
    def one_of_four(kind: str | None) -> Plan:
        return with_step(plan(step(1), step(2), step(3), step(4), kind=kind), 1, "failed")

    assert too_many_failed(one_of_four("writing"), THRESHOLDS)  # 25% > 20%
    assert not too_many_failed(one_of_four("research"), THRESHOLDS)  # 25% <= 50%
    assert too_many_failed(one_of_four("actions"), THRESHOLDS)  # any failure
    assert not too_many_failed(one_of_four(None), THRESHOLDS)  # no kind: more than half
    three = with_step(with_step(one_of_four(None), 2, "failed"), 3, "failed")
    assert too_many_failed(three, THRESHOLDS)
    assert failure_rule(one_of_four("writing"), THRESHOLDS) == (
        "more than 20% of its steps failed (the limit for a writing task)"
    )
    assert failure_rule(one_of_four(None), THRESHOLDS) == "more than half of its steps failed"
    done = with_step(with_step(with_step(one_of_four("research"), 2, "completed"), 3, "completed"), 4, "completed")
    assert all_ended(done) and not all_ended(one_of_four("research"))


def test_the_planner_names_the_kind_and_an_unknown_kind_is_none() -> None:
    schema = planner.plan_schema(["research"], 4)
    assert schema["properties"]["kind"]["enum"] == ["research", "writing", "actions", "other"]
    assert "kind" in schema["required"]
    reply = {"title": "T", "kind": "writing", "steps": [{"id": 1, "title": "a", "instruction": "b", "capability": "x"}]}
    parsed = parse_plan(json.dumps(reply))
    assert isinstance(parsed, Plan) and parsed.kind == "writing"
    other = parse_plan(json.dumps(reply | {"kind": "other", "revision": 9}))
    assert isinstance(other, Plan) and other.kind is None and other.revision == 0


def test_a_failed_step_or_a_resumed_task_makes_the_planner_check_the_plan_at_most_max_replans_times() -> None:
    work = with_step(plan(step(1), step(2, [1]), step(3)), 1, "failed", "no usable answer")
    assert replan_due(work, recheck=False, max_replans=2)
    assert recheck_reason(work, recheck=False) == (
        "step 1 (step 1) failed: no usable answer; step 2 (step 2) blocked: step 1 did not finish"
    )
    seen = checked(work)
    assert (seen.auto_replans, seen.checked) == (1, [1, 2])
    assert not replan_due(seen, recheck=False, max_replans=2)  # those failures were seen
    assert replan_due(seen, recheck=True, max_replans=2)  # a person resumed it
    assert not replan_due(checked(seen), recheck=True, max_replans=2)  # two checks are the most
    assert not replan_due(plan(step(1)), recheck=False, max_replans=2)  # nothing failed


def test_the_planners_check_must_plan_the_remaining_work_not_copy_the_plan_or_redo_a_completed_step() -> None:
    # What Qwen2.5-Coder-1.5B answered its own check after a failure on the tasks benchmark.
    names = {"nova": "Nova", "rex": "Rex"}
    done = with_step(plan(step(1), step(2, [1])), 1, "completed", "Remote work needs flexibility.")
    old = with_step(done, 2, "failed", "no usable answer")
    again = Plan(title="T", steps=[titled(1, "Step 1."), titled(2, "Write the policy")])
    copied = Plan(title="T", steps=[titled(1, "Summarise what remote work needs — Nova: Remote work needs…")])
    fresh = Plan(title="T", steps=[titled(1, "Write the policy in two sentences")])
    assert revision_problem(old, again, names, redo_allowed=False) == (
        "step 1 (Step 1.) repeats completed step 1; plan only the remaining work"
    )
    assert revision_problem(old, again, names, redo_allowed=True) is None  # a person may ask for it again
    assert revision_problem(old, copied, names, redo_allowed=True) == (
        "step 1 copies a line of the plan message; give it a short title of its own"
    )
    assert revision_problem(old, Plan(title="T", steps=[step(1), step(1)]), names, redo_allowed=True) == (
        "two steps share an id"
    )
    assert revision_problem(old, fresh, names, redo_allowed=False) is None
    idea = Plan(title="T", steps=[titled(1, "Plan Q3 — Nova's idea"), titled(2, "Send it — Rex (after 1)")])
    assert revision_problem(old, idea, names, redo_allowed=False) == (
        "step 2 copies a line of the plan message; give it a short title of its own"
    )  # a dash before a name alone is no line of the plan


def test_what_a_replan_changed_is_said_in_one_line() -> None:
    old = with_step(with_step(plan(step(1), step(2, [1]), step(3, [2])), 1, "completed", "ok"), 2, "failed", "x")
    same = Plan(title="Launch", steps=[step(2, [1]), step(3, [2])])
    assert plan_change(old, merge_replan(old, same)) == ""
    other = Plan(
        title="Launch",
        steps=[Step(id=2, title="Ask Nova", instruction="ask", capability="writing"), step(3, [2]), step(4)],
    )
    assert plan_change(old, merge_replan(old, other)) == (
        "Plan changed: step 2 replaced by 2. Ask Nova; step 4 added: step 4."
    )
    assert plan_change(old, merge_replan(old, Plan(title="L", steps=[step(2, [1])]))) == (
        "Plan changed: step 3 dropped."
    )


def test_a_crash_mid_move_takes_each_steps_stored_attempt() -> None:
    work = plan(step(1, assignee="sage"), step(2, assignee="nova"), step(3, [1, 2], "rex"))
    ran = after_attempt(started(work, 1, "sage"), 1, failure=None, result="venues", batches=[], step_attempts=3)
    second = started(
        after_attempt(started(ran, 2, "nova"), 2, failure="x", result="", batches=[], step_attempts=3), 2, "nova"
    )
    records = [
        StepRecord(1, 0, 1, 10, ran.steps[0].model_dump_json(), True),  # ended: completed
        StepRecord(2, 0, 2, 12, second.steps[1].model_dump_json(), False),  # its second attempt under way
        StepRecord(3, 1, 1, 13, step(3).model_dump_json(), False),  # another revision's step 3
    ]
    taken = with_records(work, records)
    assert [(s.status, s.attempts) for s in taken.steps] == [("completed", 1), ("in_progress", 2), ("pending", 0)]
    assert taken.steps[1].last_failure == "x"
    assert with_records(taken, records) == taken  # the plan already knows: nothing changes


def test_steps_waiting_for_approval_let_independent_steps_run_and_settle_when_theirs_ended() -> None:
    from graph.task_flow import TaskState, next_move

    def state(work: Plan, **changes: object) -> TaskState:
        base = TaskState(
            task_id=1, channel_key="console:t", thread=None, request="r", author_name="Ana",
            plan=work.model_dump(), status="running", note="", instruction="", stop=False, new_batches=[],
            paused_by=None, taken_by=None, cancelled_by=None, cancel_reason="", handed_in=[], recheck=False,
        )  # fmt: skip
        return {**base, **changes}  # type: ignore[typeddict-item]

    work = plan(step(1, assignee="nova"), step(2, assignee="rex"), step(3, [1, 2], "sage"), step(4, assignee="sage"))
    both = with_waiting(with_waiting(started(started(work, 1, "nova"), 2, "rex"), 1, ["b1"], "a"), 2, ["b2"], "b")
    assert next_move(state(both), undecided=True) == "step"  # step 4 needs neither: it runs meanwhile
    assert next_move(state(both)) == "settle"  # an approval of one of them has ended
    ran = with_step(both, 4, "completed", "done")
    assert next_move(state(ran), undecided=True) == "wait"  # only the waiting steps are left
    one = after_approvals(ran, 1, [Ended(1, "executed", "publish_post: posted")])
    assert next_move(state(one), undecided=True) == "wait"  # step 3 still needs step 2
    assert next_move(state(one, recheck=True), undecided=True) == "replan"  # a person resumed it
