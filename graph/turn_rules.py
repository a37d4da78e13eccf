"""What a persona's turn may do and what the channel is told about it: pure decisions, each made here.

- may_pass: a persona may pass (post nothing) when it has nothing new to add to what another persona
  answered already, except on a line a person addressed to it by name, a task's step, or its tools'
  answer, which someone waits for: a line is never left without an answer by a pass.
- is_pass: whether a draft is the pass word (graph.turn_text.PASS_WORD), on every provider alike.
- skip_notice: a persona skipped after its retries is shown at most as a short, calm notice, and only
  when a person named it: the review's reason is for the log, never for the channel.
- says_round_stopped: "Round stopped" is for moderated rounds and tasks, never for a one-line round.
"""

from __future__ import annotations

import re

from graph.routing import too_many_failures
from graph.turn_text import PASS_WORD

ROUND_STOPPED = "Round stopped: more than half of its turns failed."
_MARKS = re.compile(r"[\s*_`~.!,:;\-–—()\[\]\"'“”]+")


def may_pass(*, heard_already: bool, addressed_by_person: bool, task_step: bool, relay: bool) -> bool:
    """Only a later turn may pass, once another persona has answered the line: the first answer to a
    line (the one natural pick of an unmoderated round, the moderator's first) is never left unsaid."""
    return heard_already and not (addressed_by_person or task_step or relay)


def is_pass(text: str) -> bool:
    """Whether the draft is only the pass word, however marked up ("PASS", "pass.", "**PASS**")."""
    return _MARKS.sub("", text).casefold() == PASS_WORD.casefold()


def skip_notice(name: str, *, addressed_by_person: bool) -> str | None:
    """What a chat round says of a persona skipped after its retries: a short line to the person who
    named it, else nothing."""
    return f"{name} has no answer to that right now." if addressed_by_person else None


def says_round_stopped(*, moderated: bool, failures: int, planned_turns: int) -> bool:
    """Whether the round ends with ROUND_STOPPED: a moderated round more than half of whose turns
    failed. A one-line round (moderation off) just ends: nobody asked for a round."""
    return moderated and too_many_failures(failures, planned_turns)
