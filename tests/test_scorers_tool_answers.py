"""The tool-answers scorer: right answers pass it, and the wrong answers the old substring check let
through (a fragment inside another word, a fact the clock line holds, an answer with no tool) fail it."""

from __future__ import annotations

from typing import Any

from bench.scorers.text import mentions as holds
from bench.scorers.tool_answers import ToolCall, score

CLOCK = ["It is Friday 27 November 2026, 10:00 (UTC)."]


def line(note: str, answer: str, text: str | None = None) -> dict[str, Any]:
    return {"author": "Ana", "text": text or f"Rex, read the note '{note}'", "note": note, "answer": answer}


def read(title: str) -> list[ToolCall]:
    return [ToolCall("notes.read_note", {"title": title})]


def test_the_fact_after_reading_the_right_note_is_answered() -> None:
    verdict = score(line("wifi", "otter-42"), ["The guest wifi password is otter-42."], read("wifi"), CLOCK)
    assert verdict.called and verdict.stated and not verdict.given
    assert verdict.answered


def test_tomorrow_is_not_tom() -> None:
    verdict = score(line("laptop", "tom"), ["Laptops are handed out tomorrow."], read("laptop"), CLOCK)
    assert not verdict.stated
    assert not verdict.answered
    assert score(line("laptop", "tom"), ["Tom hands them out."], read("laptop"), CLOCK).answered


def test_friday_with_no_tool_call_is_not_answered() -> None:
    verdict = score(line("standup", "on friday"), ["We ship the search page on Friday."], [], CLOCK)
    assert verdict.stated
    assert not verdict.answered


def test_a_fact_the_clock_line_holds_never_counts_even_after_the_tool() -> None:
    verdict = score(line("standup", "friday"), ["It ships Friday."], read("standup"), CLOCK)
    assert verdict.given
    assert not verdict.answered


def test_a_fact_the_question_holds_never_counts() -> None:
    question = "Rex, is the venue the Blue Hall? Read the note 'venue'"
    verdict = score(line("venue", "blue hall", question), ["Yes, the Blue Hall."], read("venue"), CLOCK)
    assert verdict.given
    assert not verdict.answered


def test_thousands_separators_and_number_words_are_the_same_number() -> None:
    budget = line("budget", "12000 euros")
    assert score(budget, ["The budget is 12,000 euros."], read("budget"), CLOCK).answered
    assert score(line("guests", "twelve guests"), ["12 guests are coming."], read("guests"), CLOCK).answered
    assert score(line("office", "8 am"), ["It opens at 8am."], read("office"), CLOCK).answered


def test_a_different_number_is_not_the_fact() -> None:
    budget = line("budget", "12000 euros")
    assert not score(budget, ["The budget is 120,000 euros."], read("budget"), CLOCK).answered
    assert not score(budget, ["The budget is 12000 dollars."], read("budget"), CLOCK).answered
    assert not score(line("release", "2.4"), ["Version 12.4 ships in May."], read("release"), CLOCK).answered


def test_the_fact_present_without_the_tool_called_is_not_answered() -> None:
    verdict = score(line("door", "5591"), ["The door code is 5591."], [], CLOCK)
    assert verdict.stated and not verdict.called
    assert not verdict.answered


def test_the_tool_called_for_another_note_is_not_answered() -> None:
    verdict = score(line("door", "5591"), ["The door code is 5591."], read("office"), CLOCK)
    assert not verdict.called
    assert not verdict.answered
    other_tool = [ToolCall("notes.write_note", {"title": "door", "text": "5591"})]
    assert not score(line("door", "5591"), ["The door code is 5591."], other_tool, CLOCK).answered


def test_the_title_is_matched_as_the_server_looks_it_up() -> None:
    assert score(line("door", "5591"), ["It is 5591."], read(" 'Door' "), CLOCK).answered


def test_the_whole_fact_is_needed_not_a_part() -> None:
    assert not holds("The venue is the Blue Room.", "blue hall")
    assert not holds("spot 17", "level 3, spot 17")
    assert holds("Park on level 3, spot 17.", "level 3 spot 17")
    assert holds("Lunch is at Rosa's.", "rosa")


def test_an_empty_answer_or_no_posts_is_not_answered() -> None:
    assert not score(line("wifi", "otter-42"), [], read("wifi"), CLOCK).answered
    assert not holds("anything at all", "")
