"""The memory benchmark's scorer: does Sage's answer give the asked fact, and only it?

A question (bench/lines/*/memory.jsonl) lists `holds`, the ways of writing the fact (any one will do,
as whole words with numbers normalised: "4,500 euros" holds "4500"), and `lacks`: the values that
compete with it (a fact of the same kind, the value a later line corrected). An answer counts when it
holds the fact and none of the lacks, and is not a recital: an answer that also gives the facts of two
or more of the conversation's other questions has recited what it remembers instead of answering."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.scorers.text import mentions, mentions_any

RECITAL = 2  # other questions' facts in one answer from which it is a recital, not an answer


@dataclass(frozen=True)
class Question:
    ask: str
    holds: tuple[str, ...]
    lacks: tuple[str, ...] = ()

    @classmethod
    def of(cls, label: Mapping[str, Any]) -> Question:
        return cls(label["ask"], tuple(label["holds"]), tuple(label.get("lacks", ())))


@dataclass(frozen=True)
class Verdict:
    right: bool
    why: str  # what was wrong, or "" when right


def recall(answer: str, question: Question, others: Sequence[Question] = ()) -> Verdict:
    """Whether `answer` gives `question`'s fact; `others`: the conversation's other questions."""
    if not mentions_any(answer, question.holds):
        return Verdict(False, f"does not hold {' / '.join(question.holds)}")
    wrong = [value for value in question.lacks if mentions(answer, value)]
    if wrong:
        return Verdict(False, f"also gives {', '.join(wrong)}")
    recited = [q.holds[0] for q in others if q != question and mentions_any(answer, q.holds)]
    if len(recited) >= RECITAL:
        return Verdict(False, f"recites other facts too ({', '.join(recited)})")
    return Verdict(True, "")


def score(answers: Sequence[str], questions: Sequence[Question]) -> list[Verdict]:
    """One verdict per question of one conversation, the answers in the questions' order."""
    if len(answers) != len(questions):
        raise ValueError(f"{len(answers)} answers for {len(questions)} questions")
    return [recall(answer, question, questions) for answer, question in zip(answers, questions, strict=True)]


def label_problems(questions: Sequence[Question], system_text: str) -> list[str]:
    """Labels that would score a right answer without memory: a fact the question itself or the
    persona's own prompt (its system text, the clock line) already holds."""
    problems = []
    for question in questions:
        for value in question.holds:
            if mentions(question.ask, value):
                problems.append(f"{question.ask!r}: the question holds {value!r}")
            if mentions(system_text, value):
                problems.append(f"{question.ask!r}: the persona's prompt holds {value!r}")
    return problems
