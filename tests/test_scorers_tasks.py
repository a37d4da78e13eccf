"""The tasks benchmark's scorer on right and wrong runs: a wrong answer or an empty step must never count."""

from __future__ import annotations

from bench.lines import labelled
from bench.scorers.tasks import Action, Expect, StepRun, TaskRun, only_promises, step_problem, verdict

REQUEST = "Organise the offsite: write the invitation and send it to Ben"
INVITATION = (
    "You are invited to our offsite on 12 June at the Lakeside Inn, from ten until four. "
    "Bring walking shoes; lunch and a boat trip on the lake are on us."
)
NOTE = (
    "Task: Organise the offsite. You are writing the task's answer now. What was done: step 1. "
    "Give the person who asked the result itself, in a few sentences, without repeating these instructions."
)
EXPECT = Expect(
    must_run=({"action": "send_message", "to": "Ben"},),
    answer_holds=(("offsite",), ("invitation", "invited")),
    answer_lacks=("[date]",),
)


def write_step(result: str = INVITATION) -> StepRun:
    return StepRun(1, "Write the invitation", "Write a short invitation to the offsite", "completed", result)


def send_step(result: str) -> StepRun:
    return StepRun(2, "Send the invitation", "Send the invitation to Ben", "completed", result)


def sent(status: str = "executed") -> Action:
    return Action("send_message", {"to": "Ben", "text": INVITATION}, status, step=2)


def run(
    answer: str | None,
    *,
    steps: tuple[StepRun, ...] | None = None,
    actions: tuple[Action, ...] = (sent(),),
    status: str = "completed",
) -> TaskRun:
    steps = steps or (write_step(), send_step(f"Sent to Ben: {INVITATION}"))
    return TaskRun(REQUEST, status, steps, answer, actions, notes=(NOTE + " " + INVITATION,))


RIGHT = f"Done: Ben has the invitation. {INVITATION}"


def test_a_completed_task_that_sent_and_answered_with_its_result_counts() -> None:
    assert verdict(run(RIGHT), EXPECT).counts


def test_sorry_ill_send_it_now_does_not_complete_a_send_step_nor_count_the_task() -> None:
    promise = send_step("Sorry about that, I'll send it now.")
    task = run(RIGHT, steps=(write_step(), promise), actions=())
    assert step_problem(promise, task) == "only promises or takes it on"
    outcome = verdict(task, EXPECT)
    assert not outcome.counts and any("did not run" in why for why in outcome.why)
    assert not verdict(run("Sorry about that, I'll send it now."), EXPECT).counts


def test_an_answer_that_echoes_the_ask_fails() -> None:
    outcome = verdict(run("Organise the offsite: write the invitation and send it to Ben."), EXPECT)
    assert not outcome.counts and "answer says nothing beyond the ask" in outcome.why


def test_an_answer_that_copies_the_private_note_out_fails() -> None:
    outcome = verdict(run(NOTE + " The invitation was sent."), EXPECT)
    assert not outcome.counts and "answer copies a private note" in outcome.why


def test_an_answer_may_give_a_steps_result_word_for_word() -> None:
    assert verdict(run(f"The offsite invitation went to Ben: {INVITATION}"), EXPECT).counts


def test_a_task_whose_action_failed_or_ran_elsewhere_does_not_count() -> None:
    assert not verdict(run(RIGHT, actions=(sent("failed"),)), EXPECT).counts
    elsewhere = Action("send_message", {"to": "Cleo", "text": INVITATION}, "executed", step=2)
    assert not verdict(run(RIGHT, actions=(elsewhere,)), EXPECT).counts
    posted = Action("publish_post", {"channel": "general", "text": INVITATION}, "executed", step=2)
    assert not verdict(run(RIGHT, actions=(posted,)), EXPECT).counts


def test_a_channel_is_the_same_with_or_without_its_hash() -> None:
    wanted = Expect(must_run=({"action": "publish_post", "channel": "general"},), answer_holds=(("offsite",),))
    posted = Action("publish_post", {"channel": "#general", "text": INVITATION}, "executed", step=2)
    assert verdict(run(RIGHT, actions=(posted,)), wanted).counts
    other = Action("publish_post", {"channel": "general-chat", "text": INVITATION}, "executed", step=2)
    assert not verdict(run(RIGHT, actions=(other,)), wanted).counts


def test_a_task_not_completed_or_without_an_answer_does_not_count() -> None:
    assert not verdict(run(RIGHT, status="failed"), EXPECT).counts
    assert not verdict(run(None), EXPECT).counts


def test_an_answer_missing_a_labelled_fact_or_holding_a_placeholder_fails() -> None:
    no_invite = "Ben now has the message about the offsite at the Lakeside Inn on 12 June, ten until four."
    assert "answer lacks invitation / invited" in verdict(run(no_invite), EXPECT).why
    placeholder = "You are invited to our offsite on [date] at the Lakeside Inn; bring walking shoes and rain coats."
    assert "answer has '[date]'" in verdict(run(placeholder), EXPECT).why


def test_a_step_that_takes_it_on_echoes_its_instruction_or_copies_another_result_does_not_complete() -> None:
    task = run(RIGHT)
    assert step_problem(write_step("Sure, let's write the invitation."), task) == "only promises or takes it on"
    assert step_problem(write_step("Write a short invitation to the offsite."), task) == "says nothing beyond the ask"
    copy = StepRun(3, "Review the invitation", "Check it for tone", "completed", INVITATION)
    assert step_problem(copy, run(RIGHT, steps=(write_step(), copy))) == "copies another result"
    assert step_problem(write_step(), task) is None
    assert step_problem(StepRun(1, "Write", "Write it", "failed", INVITATION), task) == "status failed"


def test_promises_are_told_from_work() -> None:
    assert only_promises("Sorry about that, I'll send it now.")
    assert only_promises("Sure! Let me get started on that right away.")
    assert not only_promises(INVITATION)
    assert not only_promises("Sure. Notion wins: it syncs offline, shares pages and costs nothing for small teams.")


def test_the_development_lines_carry_expectations() -> None:
    lines = labelled("tasks", "dev")
    assert len(lines) >= 10 and all(Expect.of(line["expect"]).answer_holds for line in lines)
    assert any(line["expect"]["must_run"] for line in lines)
    assert {line["is_task"] for line in labelled("tasks_coordinator", "dev")} == {True, False}


def test_a_step_whose_action_ran_completes_and_one_whose_action_failed_does_not() -> None:
    step = send_step(f"Sent to Ben: {INVITATION}")
    assert step_problem(step, run(RIGHT)) is None
    assert step_problem(step, run(RIGHT, actions=(sent("failed"),))) == "its action did not run (send_message)"
