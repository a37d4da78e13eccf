"""The tasks benchmark's scorer: did a task do what was asked, and did each step do work?

A task (bench/lines/*/tasks.jsonl) counts only when its status is completed, every action of its
`must_run` ran (executed, with the labelled arguments), and its final answer shows work of its own:
each `answer_holds` group has one alternative in it as whole words, no `answer_lacks` phrase is there,
and it is not the request echoed, a promise ("Sorry about that, I'll send it now."), or a private note
(what the team was told privately while working) copied out.

A step completes in the score only when the run says completed and its result shows work: words of
its own beyond the request and the step's title and instruction, once promises and pleasantries are
set aside, and not a copy of an earlier step's result or of a private note; a step whose actions
all ran has done its work. The benchmark's own rules:
nothing here comes from the product's judgements (graph/), which are what it measures."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.scorers.text import mentions, mentions_any, shingles, words

NEW_WORDS = 5  # content words of its own (outside the ask) from which a result shows work
COPIED = 0.5  # the share of a text's five-word runs found elsewhere from which it is a copy

# Function words and the words of taking work on, which show no work whatever follows them.
STOPWORDS = frozenset(
    "a an the and or but if so to of in on at by for with from as is are was were be been being it its this that "
    "these those there here i me my we our us you your he she they them their his her will would shall should can "
    "could may might must do does did done have has had not no yes all any some each every one two also just very "
    "more most much many than then now about into over up out what which who whom how when where why".split()
)
# A sentence that only takes the work on, promises it, or apologises: "I'll send it now.", "Let's start."
_PROMISE = re.compile(
    r"\b(i|we)('ll| will| shall| am going to|'m going to| are going to|'re going to)\b"
    r"|\blet('s| me| us)\b|\b(will|'ll) (now )?(be )?(send|sent|post|posted|publish|published|share|shared|do|done|"
    r"get|handle|handled|write|written|draft|drafted|start|started|follow|take)\b|\bon it\b|\bright away\b"
)
_PLEASANTRY = re.compile(
    r"^(sorry|sure|okay|ok|of course|certainly|absolutely|no problem|got it|thanks|thank you|great|alright|"
    r"understood|noted|happy to help|will do|done)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Action:
    """An action the task's steps asked for, as the run recorded it."""

    name: str
    args: Mapping[str, Any]
    status: str  # "executed" when it ran
    step: int | None = None  # the step that asked for it


@dataclass(frozen=True)
class StepRun:
    id: int
    title: str
    instruction: str
    status: str
    result: str  # the step's whole result (its artifact), else its summary


@dataclass(frozen=True)
class TaskRun:
    request: str
    status: str
    steps: tuple[StepRun, ...]
    answer: str | None
    actions: tuple[Action, ...] = ()
    notes: tuple[str, ...] = ()  # what the personas were told privately during the task


@dataclass(frozen=True)
class Expect:
    must_run: tuple[Mapping[str, Any], ...] = ()
    answer_holds: tuple[tuple[str, ...], ...] = ()
    answer_lacks: tuple[str, ...] = ()

    @classmethod
    def of(cls, label: Mapping[str, Any]) -> Expect:
        return cls(
            tuple(label.get("must_run", ())),
            tuple(tuple(group) for group in label.get("answer_holds", ())),
            tuple(label.get("answer_lacks", ())),
        )


@dataclass(frozen=True)
class Verdict:
    counts: bool
    why: list[str] = field(default_factory=list)  # every reason it does not count


def only_promises(text: str) -> bool:
    """Whether every sentence of `text` only promises, takes the work on or is a pleasantry."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    return all(_is_promise(s) for s in sentences)


def _is_promise(sentence: str) -> bool:
    folded = sentence.casefold().replace("\u2019", "'")
    return _PROMISE.search(folded) is not None or (_PLEASANTRY.search(folded) is not None and len(folded.split()) <= 5)


def own_words(text: str, ask: str) -> list[str]:
    """The content words of `text` outside `ask`, its promise and pleasantry sentences set aside."""
    kept = " ".join(s for s in _SENTENCE_END.split(text) if s.strip() and not _is_promise(s))
    asked = set(words(ask))
    return [w for w in words(kept) if w not in STOPWORDS and w not in asked and len(w) > 1]


def copied_share(text: str, sources: Sequence[str]) -> float:
    """The share of `text`'s five-word runs that stand in one of `sources` (0 without sources)."""
    runs = shingles(text)
    if not runs or not sources:
        return 0.0
    found: set[tuple[str, ...]] = set().union(*(shingles(source) for source in sources))
    return len(runs & found) / len(runs)


def _note_only(notes: Sequence[str], results: Sequence[str]) -> list[str]:
    """The notes' own words, for copies: a step's result the note carries is that result's (an answer
    may give it), so it is cut out of the note first."""
    kept = []
    for note in notes:
        for result in results:
            note = note.replace(result, "\n")
        kept.append(note)
    return kept


def shows_work(text: str, ask: str, copies_of: Sequence[str], notes: Sequence[str]) -> str | None:
    """Why `text` shows no work of its own, or None when it does."""
    if not text.strip():
        return "empty"
    if only_promises(text):
        return "only promises or takes it on"
    if len(set(own_words(text, ask))) < NEW_WORDS:
        return "says nothing beyond the ask"
    if copied_share(text, notes) >= COPIED:
        return "copies a private note"
    if copied_share(text, copies_of) >= COPIED:
        return "copies another result"
    return None


def step_problem(step: StepRun, run: TaskRun) -> str | None:
    """Why `step` does not complete in the score, or None when it does."""
    if step.status != "completed":
        return f"status {step.status}"
    own = [a for a in run.actions if a.step == step.id]
    failed = [a.name for a in own if a.status != "executed"]
    if failed:
        return f"its action did not run ({', '.join(failed)})"
    if own:
        return None  # its work is what its actions did: a send step may well repeat the text it sent
    others = [s.result for s in run.steps if s.id < step.id and s.result]  # the earlier one is the original
    ask = f"{run.request} {step.title} {step.instruction}"
    return shows_work(step.result, ask, others, _note_only(run.notes, [s.result for s in run.steps]))


def ran(wanted: Mapping[str, Any], actions: Sequence[Action]) -> bool:
    """Whether an executed action is `wanted`'s, with each labelled argument (a channel without its #)."""
    name = wanted["action"]
    args = {k: v for k, v in wanted.items() if k != "action"}
    return any(
        a.name == name and a.status == "executed" and all(_same_arg(a.args.get(k), v) for k, v in args.items())
        for a in actions
    )


def _same_arg(got: Any, wanted: Any) -> bool:
    if got is None:
        return False
    got_text, wanted_text = str(got).strip().lstrip("#@"), str(wanted).strip().lstrip("#@")
    return got_text.casefold() == wanted_text.casefold() or (
        len(wanted_text.split()) > 1 and mentions(got_text, wanted_text)
    )


def verdict(run: TaskRun, expect: Expect) -> Verdict:
    """Whether the task counts, with every reason it does not."""
    why = []
    if run.status != "completed":
        why.append(f"status {run.status}")
    why += [f"did not run {dict(w)}" for w in expect.must_run if not ran(w, run.actions)]
    if run.answer is None:
        why.append("no answer")
    else:
        results = [s.result for s in run.steps if s.result]
        problem = shows_work(run.answer, run.request, [], _note_only(run.notes, results))
        if problem:
            why.append(f"answer {problem}")
        why += [f"answer lacks {' / '.join(g)}" for g in expect.answer_holds if not mentions_any(run.answer, g)]
        why += [f"answer has {phrase!r}" for phrase in expect.answer_lacks if _has_phrase(run.answer, phrase)]
    return Verdict(not why, why)


def _has_phrase(text: str, phrase: str) -> bool:
    """Whole words, or the phrase as written when it is not made of words ("[date]")."""
    return mentions(text, phrase) or (not phrase[:1].isalnum() and phrase.casefold() in text.casefold())
