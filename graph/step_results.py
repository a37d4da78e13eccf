"""Whether a step's reply is the step's result: one decision, as a pure function.

A small model often answers a step with something that is no result: a refusal, a copy of the
task's request, of its own step or of another step's result, its instruction said back, or only a
promise to do the step ("Sure, let's get started."). Such an attempt fails, and the persona's next
note says why (graph/task_steps.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graph.review import refuses, repeats
from graph.tasks import Plan, summary_of, words_of

ECHO_NEW_WORDS = 3  # a step's reply needs at least this many words it was not given

# The words of a reply that takes a step on without doing it: "Sure, let's get started.", "Okay, Rex,
# I'll check it for tone." (the apostrophe "’" splits "I’ll" into "i" and "ll").
TAKING_IT_ON = frozenset(
    "sure ok okay alright absolutely certainly of course got it i i'll i'm i've ll m s ve let let's lets me we "
    "we'll will can do get started start going to now right away on happy glad help work working here be done "
    "soon great sounds good no problem yes thanks thank you".split()
)
TOOK_IT_ON_ONLY = "it only said it would do the step, and gave no result"


@dataclass(frozen=True)
class NoResult:
    """Why an attempt's reply is no result, and the cause it is counted under (STEP_FAILURES)."""

    why: str
    cause: Literal["review", "copied"]


def no_result(reply: str, *, asked: str, request: str, plan: Plan, step_id: int, acts: bool) -> NoResult | None:
    """Why the reply to step `step_id` is not its result, or None when it is. `asked` is what the
    persona was asked (the request, the step's header and its instruction); a step that `acts` has
    its result in its actions, so its words may only say it is on it."""
    if refuses(reply):  # in chat a refusal is posted once asked again; a step it does not complete
        return NoResult("it declined the step", "review")
    if (copied := copied_result(reply, request, plan, step_id)) is not None:
        return NoResult(copied, "copied")
    if only_repeats(reply, asked):
        return NoResult("it only repeated its instruction", "copied")
    if not acts and only_takes_it_on(reply, asked):
        return NoResult(TOOK_IT_ON_ONLY, "review")
    return None


def only_repeats(reply: str, given: str) -> bool:
    """Whether a step's reply adds next to nothing to what its persona was given: a small model often
    answers a step by repeating its instruction, which is no result."""
    return len(words_of(reply) - words_of(given)) < ECHO_NEW_WORDS


def only_takes_it_on(reply: str, given: str) -> bool:
    """Whether a step's reply only agrees to do the step: beside the words it was given, it has none
    but those that take a job on."""
    return len(words_of(reply) - words_of(given) - TAKING_IT_ON) < ECHO_NEW_WORDS


def copied_result(reply: str, request: str, plan: Plan, step_id: int) -> str | None:
    """Why a step's reply is a copy and no result: it repeats the task's request, its own step, or a
    completed step's result (graph/review.py's `repeats`); None when it is its own."""
    step = next(s for s in plan.steps if s.id == step_id)
    if repeats(reply, request):
        return "it repeated the task's request"
    if repeats(reply, step.instruction) or repeats(reply, step.title):
        return "it repeated its own step"
    for other in plan.steps:
        # Results are kept as summaries: compare like with like.
        if other.id != step_id and other.status == "completed" and repeats(summary_of(reply), other.result_summary):
            return f"it copied step {other.id}'s result"
    return None
