"""Which approval a platform post is made for, so the post carries a marker unique to it.

The runner sets the run around the port's `execute` (a context variable, as the outbox's `sending`
is: the port wrappers between them pass it through unchanged). A port that can mark its posts
(Slack message metadata) marks each piece with the approval and the piece's number; a run that
`looks_first` (start-up recovery of a run a stop cut short) finds the pieces already posted and
posts only the missing ones, or raises LookupUnfinished when it cannot tell.

A port whose posts carry no marker (Discord webhooks take no nonce) knows a post by its place in
its own sequence of posts instead: before the first attempt it notes where the target stands (`mark`,
an int: on Discord, the newest message id there) through `keep_mark`, which commits it with the
run's claim; the look-up reads only what came after that mark.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial

from storage.cut_runs import note_mark
from storage.database import Database


class LookupUnfinished(RuntimeError):
    """Whether an earlier run posted cannot be told: its outcome stays unknown (the message says why)."""


@dataclass
class ActionRun:
    approval_id: int
    looks_first: bool = False
    since: float = 0.0  # when the cut run began: the look-up reads from a little before
    pieces: int = 0  # how many messages the action is
    found: int = 0  # of them, already posted by the cut run
    mark: int | None = None  # where the target stood before the cut run's post, as it noted
    keep_mark: Callable[[int], Awaitable[None]] | None = None  # notes (commits) the mark before the post


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


def claimed_run(db: Database, approval_id: int | None) -> ActionRun | None:
    """The run an approved action's post is made for, which notes its mark with the run's claim."""
    if approval_id is None:
        return None
    return ActionRun(approval_id, keep_mark=partial(note_mark, db, approval_id))


def refuse_to_look(where: str) -> None:
    """For a port whose posts carry no marker: a run that must look first cannot."""
    run = current_run()
    if run is not None and run.looks_first:
        raise LookupUnfinished(f"{where} posts carry no marker to look them up by")
