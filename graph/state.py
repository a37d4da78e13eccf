"""The state of one round: from a human line until the last persona of the round has spoken."""

from __future__ import annotations

from typing import Any, TypedDict


class RoundState(TypedDict):
    channel_key: str
    thread: str | None
    text: str  # the human line that started the round
    author_name: str
    mentions: list[str]
    moderated: bool  # the mode the round started in
    moderated_now: bool  # re-read after each turn: /moderate off stops a round after the current turn
    max_turns: int
    queue: list[str]  # unmoderated rounds: who speaks after the current speaker
    speaker: str | None
    last_speaker: str | None
    spoken_since_human: list[str]
    skipped: list[str]  # personas whose turn failed this round: they had their turn too
    turns_taken: int
    planned_turns: int
    failures: int
    turn_failed: bool
    failure: str  # why the current turn failed, for the notice
    draft: str
    review_attempts: int
    review_note: str
    tool_calls: list[dict[str, Any]]  # the current turn's, as the model returned them
    new_batches: list[dict[str, Any]]  # actions waiting for approval, started after the round
    stopped: bool  # /stop: the round ends after the current turn
    decisions: list[str]  # the moderator's picks and reasons, for /moderate status


def initial_state(
    channel_key: str, *, text: str, author_name: str, mentions: list[str], thread: str | None
) -> RoundState:
    """Every key is set: the channel's thread is reused, so nothing may carry over from the last round."""
    return RoundState(
        channel_key=channel_key,
        thread=thread,
        text=text,
        author_name=author_name,
        mentions=mentions,
        moderated=False,
        moderated_now=False,
        max_turns=0,
        queue=[],
        speaker=None,
        last_speaker=None,
        spoken_since_human=[],
        skipped=[],
        turns_taken=0,
        planned_turns=0,
        failures=0,
        turn_failed=False,
        failure="",
        draft="",
        review_attempts=0,
        review_note="",
        tool_calls=[],
        new_batches=[],
        stopped=False,
        decisions=[],
    )
