"""The state of one round, from a human line until the last persona of the round has spoken, in
three typed parts: what started the round (RoundInput), who holds the floor (Floor, graph.floor's
business), and how the last turn ended (TurnResult). One turn's draft and review stay inside the turn.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from storage.records import TaskStep

Batch = dict[str, Any]
"""A persona turn's actions waiting for approval, started after the round (graph.approval_flow)."""


@dataclass(frozen=True, slots=True)
class RoundInput:
    """The human line that started the round, and where it was said."""

    channel_key: str
    text: str
    author_name: str
    mentions: tuple[str, ...] = ()
    thread: str | None = None
    task: TaskStep | None = None  # the task step this turn is (graph/task_flow.py): its actions' requests name it
    gathers: tuple[str, ...] = ()  # results the reply may repeat: a task's answer gathers its steps' (graph/review.py)
    # The personas (display names) who spoke since the line, as one turn begins: the round sets it
    # on the copy it gives each turn, and the turn's question names them (graph/turn_text.py).
    heard: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Floor:
    """Who has spoken, who speaks now and who is next; the round's settings, read when it begins."""

    moderated: bool = False  # the mode the round started in
    moderated_now: bool = False  # re-read after each turn: /moderate off stops a round after the current turn
    max_turns: int = 0
    queue: tuple[str, ...] = ()  # unmoderated rounds: who speaks after the current speaker
    speaker: str | None = None
    last_speaker: str | None = None
    spoken_since_human: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # personas whose turn failed or passed this round: they had their turn too
    turns_taken: int = 0
    planned_turns: int = 0
    failures: int = 0
    stopped: bool = False  # /stop, or replies paused after failures: the round ends after this turn
    decisions: tuple[str, ...] = ()  # the moderator's picks and reasons, for /moderate status

    def saved(self) -> dict[str, Any]:
        """Its fields as saved with each turn (storage.rounds): all flat, so no deep copy (asdict's)."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How one persona's turn ended: delivered (with the actions it left waiting), passed, or skipped and why."""

    speaker: str
    delivered: bool
    failure: str = ""  # why a skipped turn failed, as its notice says
    batch: Batch | None = None
    passed: bool = False  # the persona had nothing new to add and posted nothing: no failure


class RoundState(TypedDict):
    round: RoundInput
    floor: Floor
    turn: TurnResult | None  # the last turn's
    batches: Annotated[list[Batch], operator.add]  # each step adds the batches its turn left waiting


def initial_state(round_input: RoundInput) -> RoundState:
    """A fresh floor: the channel's thread is reused, so nothing may carry over from the last round."""
    return RoundState(round=round_input, floor=Floor(), turn=None, batches=[])
