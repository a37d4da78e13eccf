"""What the quality benchmark counts as a bad reply or a failed line: the benchmark's own text checks, written
apart from the product's review (graph/review.py) so that a review that lets a fault through is caught here.

A reply fails when it repeats the line it answers (echo) or an earlier line (copy), copies one of its
persona's example lines, holds chat-template or tool syntax, talks about the chat's machinery (a leak), is
written as someone else (a name tag, "I am Rex", calling its own speaker by name), or is empty, cut off or
looks like a system line. A played line fails when nobody answered, a persona's turn was skipped with a
notice, an action was proposed on a line that asked for words, or the persona it named did not answer first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

ECHO, COPY, EXAMPLE_COPY, TEMPLATE, LEAK, WRONG_SPEAKER, BROKEN = (
    "echo",
    "copy",
    "example copy",
    "template junk",
    "leak",
    "wrong speaker",
    "empty, cut-off or system-looking",
)
CHECKS = (ECHO, COPY, EXAMPLE_COPY, TEMPLATE, LEAK, WRONG_SPEAKER, BROKEN)

SIMILAR = 0.8  # a normalised similarity at or above which one line repeats another
CONTAINED_WORDS = 4  # a line of this many words or more found whole in a reply that is mostly that line
MOSTLY = 0.6
LONG_SENTENCE = 25  # characters: an example's sentence this long, found in a reply, is copied

# Words about the chat's own machinery, which no chat line between colleagues holds.
MACHINERY = (
    "system prompt",
    "my instructions",
    "your instructions",
    "as an ai",
    "language model",
    "my persona",
    "in character",
    "group chat",
    "other participants",
    "name tag",
    "my draft",
    "your draft",
    "last draft",
    "write it again",
    "characters long",
    "private note",
    "tool call",
    "could not answer",
    "was skipped",
)
_TEMPLATE = re.compile(
    r"<\|[\w]+\|>|</?(?:start_of_turn|end_of_turn|tool_call|tool_response|tools?|function_call|think|s)>"
    r"|<function[= ]|\[/?(?:INST|TOOL_CALLS|tools?)\]|```(?:json|xml)\b|\{\s*\"(?:name|tool|action)\"\s*:",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[^\W_]+")
_TAG = re.compile(r"^\s*(?:\[([^\]\n]{1,40})\]|([A-Z][\w'.-]{0,30}):)\s*")
# Words no sentence ends on; a chat line may end without a full stop ("count me in"), but not on these.
_DANGLING = frozenset("a an the and or but because to of with from than if my your our their".split())


def words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def untagged(line: str) -> str:
    """A window line without its speaker's tag ("Nova: ..." or "[Nova] ...")."""
    return _TAG.sub("", line, count=1)


def repeats(reply: str, line: str) -> bool:
    """Whether the reply says the line again: nearly the same words, or the line's words whole inside it."""
    mine, theirs = words(reply), words(line)
    if not mine or not theirs:
        return False
    if SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= SIMILAR:
        return True
    short, long = sorted((mine, theirs), key=len)
    if len(short) < CONTAINED_WORDS or len(short) < MOSTLY * len(long):
        return False
    joined, inside = " ".join(short), f" {' '.join(long)} "
    return f" {joined} " in inside


def copies_example(reply: str, examples: Sequence[str]) -> bool:
    flat = " ".join(words(reply))
    for example in examples:
        if repeats(reply, example):
            return True
        for sentence in re.split(r"(?<=[.!?])\s+", example):
            if len(sentence) >= LONG_SENTENCE and " ".join(words(sentence)) in flat:
                return True
    return False


def leak(reply: str) -> str | None:
    padded = f" {' '.join(words(reply))} "
    return next((p for p in MACHINERY if f" {' '.join(words(p))} " in padded), None)


def wrong_speaker(reply: str, own: str, others: Sequence[str]) -> bool:
    """Written as another participant (a tag or a claim on any line), or to its own speaker by name."""
    names = [re.escape(n) for n in others if n.strip() and n.casefold() != own.casefold()]
    who = "|".join([*names, r"(?:the )?(?:system|moderator|user|human)"])
    tag = re.compile(rf"^\s*(?:\[(?:{who})\]|(?:{who})\s*:)", re.IGNORECASE | re.MULTILINE)
    claim = re.compile(rf"\b(?:i am|i'm|this is|my name is|speaking as)\s+(?:{who})\b", re.IGNORECASE)
    me = re.escape(own)
    to_self = re.compile(rf"^\W*(?:(?:sure|ok|okay|yes|hi|hey|hello|thanks|right)[\s,!]+)?@?{me}\b\s*[,.!?:;—–-]", re.I)
    return bool(tag.search(reply) or claim.search(reply) or to_self.search(reply))


def broken(reply: str) -> bool:
    """Empty, stopped mid-sentence (on a comma, a colon, "the", "because"), or looking like a system line."""
    text = reply.strip()
    if not text or text.startswith("[") or "[system]" in text.casefold():
        return True
    last = text[-1]
    if last in ",:;-–—(/&":
        return True
    said = words(text)
    return last.isalnum() and bool(said) and said[-1] in _DANGLING


@dataclass(frozen=True)
class Reply:
    """A persona's posted reply: who (display name), what, the line it answered, the lines before it in
    its window ("Name: text"), and its persona's example lines."""

    speaker: str
    text: str
    answered: str
    window: Sequence[str] = ()
    examples: Sequence[str] = ()


def reply_problems(reply: Reply, others: Sequence[str]) -> list[str]:
    """Every check the reply fails; `others` are the names it must not write as (the other personas and
    the person)."""
    found = []
    if repeats(reply.text, reply.answered):
        found.append(ECHO)
    if any(repeats(reply.text, untagged(line)) for line in reply.window):
        found.append(COPY)
    if copies_example(reply.text, reply.examples):
        found.append(EXAMPLE_COPY)
    if _TEMPLATE.search(reply.text):
        found.append(TEMPLATE)
    if leak(reply.text):
        found.append(LEAK)
    if wrong_speaker(reply.text, reply.speaker, others):
        found.append(WRONG_SPEAKER)
    if broken(reply.text):
        found.append(BROKEN)
    return found


@dataclass(frozen=True)
class LineScore:
    problems: list[list[str]]  # per reply, in order
    unanswered: bool
    skipped: bool  # a turn was skipped with a "[system]" notice
    false_action: bool
    addressed_first: bool | None  # None when the line named nobody
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def score_line(
    replies: Sequence[Reply], addressed: Sequence[str], notices: Sequence[str], approvals: int, others_of: Sequence[str]
) -> LineScore:
    """One played line: its replies (speakers as display names), the display names it addressed in order,
    the "[system]" notices and approval requests it drew, and every name in the channel (personas, person)."""
    problems = [reply_problems(r, [n for n in others_of if n != r.speaker]) for r in replies]
    first = None if not addressed else bool(replies) and replies[0].speaker in addressed
    score = LineScore(problems, not replies, bool(notices), approvals > 0, first)
    failures = [f"{r.speaker}: {', '.join(p)}" for r, p in zip(replies, problems, strict=True) if p]
    failures += [label for label, bad in _line_faults(score) if bad]
    return LineScore(problems, score.unanswered, score.skipped, score.false_action, first, failures)


def _line_faults(score: LineScore) -> list[tuple[str, bool]]:
    return [
        ("unanswered", score.unanswered),
        ("a turn skipped with a notice", score.skipped),
        ("an action proposed", score.false_action),
        ("the addressed persona did not answer first", score.addressed_first is False),
    ]
