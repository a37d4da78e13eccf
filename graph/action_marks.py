"""Which approval a platform post is made for, so the post carries a marker unique to it.

The runner sets the run around the port's `execute` (a context variable, as the outbox's `sending`
is: the port wrappers between them pass it through unchanged). A port that can mark its posts
(Slack message metadata) marks each piece with the approval and the piece's number; a run that
`looks_first` (start-up recovery of a run a stop cut short) finds the pieces already posted and
posts only the missing ones, or raises LookupUnfinished when it cannot tell.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


class LookupUnfinished(RuntimeError):
    """Whether an earlier run posted cannot be told: its outcome stays unknown (the message says why)."""


@dataclass
class ActionRun:
    approval_id: int
    looks_first: bool = False
    since: float = 0.0  # when the cut run began: the look-up reads from a little before
    pieces: int = 0  # how many messages the action is
    found: int = 0  # of them, already posted by the cut run


_current: ContextVar[ActionRun | None] = ContextVar("action_run", default=None)


def current_run() -> ActionRun | None:
    return _current.get()


@contextmanager
def acting_for(run: ActionRun | None) -> Iterator[ActionRun | None]:
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)


def refuse_to_look(where: str) -> None:
    """For a port whose posts carry no marker: a run that must look first cannot."""
    run = current_run()
    if run is not None and run.looks_first:
        raise LookupUnfinished(f"{where} posts carry no marker to look them up by")
