"""Was one labelled tool-answer line answered (bench/tool_answers.py)? Three things, all required:

- the right tool ran for the right argument: the notes server's read_note for the line's note title;
- a post of Rex's holds the line's WHOLE fact as words: "tom" is not in "tomorrow", "12,000" is "12000",
  "twelve" is "12", "Rosa's" holds "rosa";
- the fact is not one the person already had: a fact that the question or the prompt's clock line
  ("It is Friday 27 November 2026, 10:00 (UTC).") holds proves nothing, so it never counts as answered.

Pure: what the run recorded (Rex's posts, the tool calls, the clock lines its prompts carried) in, a
verdict out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.scorers.text import mentions

TOOL = "notes.read_note"  # SERVER.TOOL, as the app names an MCP tool


@dataclass(frozen=True)
class ToolCall:
    """A call the tool's server received: its qualified name ("notes.read_note") and arguments."""

    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    called: bool  # the right tool ran for the line's note
    stated: bool  # a post of Rex's holds the whole fact
    given: bool  # the question or a clock line already held the fact: it cannot count

    @property
    def answered(self) -> bool:
        return self.called and self.stated and not self.given


def _title(value: Any) -> str:
    """A note title as the notes server looks it up: case-insensitive; surrounding quotes and spaces
    are how a title is quoted, not part of it."""
    return str(value).strip().strip("'\"‘’“”").strip().casefold()


def score(line: Mapping[str, Any], said: Sequence[str], calls: Sequence[ToolCall], clock: Sequence[str]) -> Verdict:
    """The verdict on one labelled line ({"text", "note", "answer", ...}): `said` is every post of
    Rex's after the line, `calls` every tool call the server received for it, `clock` every clock line
    the turn's prompts carried."""
    fact = str(line["answer"])
    called = any(call.name == TOOL and _title(call.args.get("title", "")) == _title(line["note"]) for call in calls)
    stated = any(mentions(text, fact) for text in said)
    given = any(mentions(text, fact) for text in [str(line["text"]), *clock])
    return Verdict(called=called, stated=stated, given=given)
