"""The memory benchmark's scorer on right and wrong answers: a wrong answer must never count."""

from __future__ import annotations

from bench.lines import labelled
from bench.scorers.memory import Question, label_problems, recall, score

BOAT = Question("Sage, what is the boat we rented called?", ("marigold",), ("bluebell",))
PORT = Question("Sage, which port do we sail from?", ("porto",), ("lisbon",))
BUDGET = Question("Sage, how big is the trip budget?", ("4500 euros", "4500"), ("3200",))
SKIPPER = Question("Sage, who is the skipper?", ("irene",), ("marta",))
CONVERSATION = [BOAT, PORT, BUDGET, SKIPPER]
SUMMARY = (
    "We rented the boat Marigold, we sail from Porto (not Lisbon any more), the budget is 4,500 euros "
    "and the skipper is Irene."
)


def test_the_fact_alone_counts_with_its_number_written_any_way() -> None:
    assert recall("The boat is called Marigold.", BOAT, CONVERSATION).right
    assert recall("It is 4,500 euros for the whole group.", BUDGET, CONVERSATION).right
    assert recall("The budget is 4\u00a0500 euros.", BUDGET, CONVERSATION).right  # a no-break space, as typeset
    assert not recall("The budget is 4 500 euros.", BUDGET, CONVERSATION).right  # a plain space joins no number


def test_a_recital_of_the_whole_summary_fails_a_recall_question() -> None:
    for question in CONVERSATION:
        assert not recall(SUMMARY, question, CONVERSATION).right, question.ask


def test_the_old_value_after_a_correction_fails() -> None:
    assert not recall("We sail from Lisbon.", PORT, CONVERSATION).right
    verdict = recall("Porto, or maybe Lisbon, I am not sure.", PORT, CONVERSATION)
    assert not verdict.right and "lisbon" in verdict.why
    assert not recall("The skipper is Marta.", SKIPPER, CONVERSATION).right


def test_a_competing_fact_of_the_same_kind_fails() -> None:
    assert not recall("It is called Bluebell.", BOAT, CONVERSATION).right
    assert not recall("Last year it was 3,200 euros.", BUDGET, CONVERSATION).right


def test_a_fragment_inside_another_word_is_not_the_fact() -> None:
    assert not recall("We leave from Portobello.", PORT, CONVERSATION).right
    assert not recall("The budget is 45000 euros.", BUDGET, CONVERSATION).right


def test_an_answer_without_the_fact_or_a_refusal_fails() -> None:
    assert not recall("What do we mean by a boat, really?", BOAT, CONVERSATION).right
    assert not recall("I do not remember that.", SKIPPER, CONVERSATION).right


def test_one_other_fact_beside_the_answer_is_an_answer_not_a_recital() -> None:
    assert recall("Marigold, the boat we take from Porto.", BOAT, CONVERSATION).right


def test_the_scores_of_a_conversation_follow_its_questions() -> None:
    verdicts = score(["Marigold.", "Lisbon.", SUMMARY, "Irene is the skipper."], CONVERSATION)
    assert [v.right for v in verdicts] == [True, False, False, True]


def test_a_label_the_question_or_the_persona_prompt_already_holds_is_reported() -> None:
    leaky = Question("Sage, is the boat called Marigold?", ("marigold",))
    assert label_problems([leaky], "You are calm.")
    assert label_problems([BOAT], "You once sailed on the Marigold.")
    assert not label_problems([BOAT, PORT], "You are a calm, careful philosopher.")


def test_the_development_lines_have_at_least_twenty_questions_none_given_away_by_its_ask() -> None:
    lines = labelled("memory", "dev")
    questions = [Question.of(q) for line in lines for q in line["questions"]]
    assert len(questions) >= 20
    assert all(20 <= len(line["conversation"]) <= 40 for line in lines)
    assert not label_problems(questions, "")
