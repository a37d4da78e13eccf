"""Whether a call the embedded model proposed is grounded in the person's line that asked for it:
what the call would send or post, and where, is found in the line (a small model invents arguments
when nobody asked for anything). Pure functions of the call and the line.

No list of the words that ask for each action stands here: one written from the actions bench's
lines missed requests worded otherwise ("queue up", "drop a message", a typo) on its held-out lines
(docs/benchmarks.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.actions import CONFIDENCE


def grounded_values(args: dict[str, Any], line: str) -> bool:
    """Whether each text argument of an MCP tool call is found in the person's line (a 270M model
    invents arguments when nobody asked for anything). A tool with no text argument is grounded
    when the line names the tool's words, which the model's choice of tool already had to match."""
    said = _values(line.split(":", 1)[-1])
    texts = [_values(value) for key, value in args.items() if key != CONFIDENCE and isinstance(value, str)]
    return all(text and _holds(said, text) for text in texts)


_AROUND_A_VALUE = "'\"`.,;:!?()[]{}<>"  # what stands around a value in a line; "/", "_" and "-" are inside one


def _values(text: str) -> list[str]:
    """A text's whitespace-separated values, without the quotes and punctuation around each:
    "America/New_York" stays one value, so "New_York" is not found in it."""
    return [v for v in (part.strip(_AROUND_A_VALUE).casefold() for part in text.split()) if v]


def _holds(said: Sequence[str], value: Sequence[str]) -> bool:
    """Whether `value`'s whole values stand in `said`, in a row."""
    return any(list(said[i : i + len(value)]) == list(value) for i in range(len(said) - len(value) + 1))


def snap_to_quote(text: str, line: str) -> str:
    """The quoted text in the line that the proposal copies, as the person wrote it: the model
    tends to drop a closing "!" or "?" of 'Welcome aboard!'."""
    for quoted in _QUOTED.findall(line):
        span = quoted[0] or quoted[1]
        if _words(span) == _words(text):
            return span
    return text


_QUOTED = re.compile(r"'([^']+)'(?=\W|$)|\"([^\"]+)\"")


def grounded(args: dict[str, Any], line: str) -> bool:
    """Whether the person's line holds what the model proposes: the text to send (and not merely
    the whole line echoed back), the channel named as one, and the recipient (a person, or a
    persona for a note).

    A 270M base model asked for arguments invents them when nobody asked for anything (a post
    "Good morning" from "Nova, good morning!", a channel copied from an example), so a proposal
    must be found in the request before it becomes a call.
    """
    said = _words(line.split(":", 1)[-1])
    text = _words(str(args.get("text", "")))
    if not text or text not in said or said.endswith(text) and len(text) >= len(said) - _ADDRESS_SLACK:
        return False
    if "channel" in args and not names_channel(line, str(args["channel"])):
        return False
    return all(_words(str(args[key])) in said for key in ("to", "persona") if key in args)


def names_channel(line: str, channel: str) -> bool:
    """Whether the line names the channel as a channel: "#launch", or Slack's mention
    "<#C0123|launch>". The word alone is not a channel ("a headline for the launch")."""
    name = _words(channel).lstrip("#")
    return bool(name) and (f"#{name}" in _words(line) or f"|{name}>" in line.casefold())


def sent_by_the_addressee(args: dict[str, Any], line: str, speaker: str) -> bool:
    """Whether a note comes from the persona the line speaks to. "Sage, pass Rex word that..."
    names Rex too, so Rex is asked as well, and the model then proposes a note from Rex to Sage
    that is just as grounded: the speaker must be named before the note's recipient."""
    if "persona" not in args or not speaker:
        return True
    said = _words(line.split(":", 1)[-1]).split()
    speaker_word, recipient_word = _words(speaker), _words(str(args["persona"]))
    if speaker_word not in said or recipient_word not in said:
        return True
    return said.index(speaker_word) < said.index(recipient_word)


_ADDRESS_SLACK = 12  # "nova, " and "nova please " before an echoed line


def _words(text: str) -> str:
    return " ".join("".join(c if c.isalnum() or c in "'#" else " " for c in text.casefold()).split())
