"""Who speaks next and when a round stops: pure functions, no I/O."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

FINISH = "FINISH"


@dataclass(frozen=True)
class Speaker:
    id: str
    name: str
    talkativeness: float


def addressed(text: str, mentions: Sequence[str], participants: Sequence[Speaker]) -> list[str]:
    """Participants addressed by @mention or by name (whole word, any case), in the order mentioned.

    Platform @mentions come first, in their order; names follow by their position in the text.
    """
    by_id = {p.id: p for p in participants}
    ordered = [m for m in mentions if m in by_id]
    found: list[tuple[int, str]] = []
    for p in participants:
        positions = [
            match.start()
            for label in {p.name, p.id}
            for match in re.finditer(rf"(?<!\w){re.escape(label)}(?!\w)", text, flags=re.IGNORECASE)
        ]
        if positions:
            found.append((min(positions), p.id))
    for _, persona_id in sorted(found):
        if persona_id not in ordered:
            ordered.append(persona_id)
    return ordered


def natural_pick(participants: Sequence[Speaker], last_speaker: str | None, rng: random.Random) -> str | None:
    """The one persona that answers an unaddressed message with moderation off.

    SillyTavern's natural order, cut to its first speaker: each participant, in shuffled order, rolls
    against its talkativeness and the first to win speaks; the last speaker may not answer itself
    right away; when nobody wins, one random participant replies.
    """
    candidates = [p for p in participants if p.id != last_speaker] or list(participants)
    if not candidates:
        return None
    shuffled = list(candidates)
    rng.shuffle(shuffled)
    winners = [p.id for p in shuffled if rng.random() < p.talkativeness]
    return winners[0] if winners else rng.choice(candidates).id


def speakers_for_unmoderated_round(
    text: str, mentions: Sequence[str], participants: Sequence[Speaker], last_speaker: str | None, rng: random.Random
) -> list[str]:
    """Everyone addressed, in mention order; otherwise exactly one natural pick."""
    chosen = addressed(text, mentions, participants)
    if chosen:
        return chosen
    pick = natural_pick(participants, last_speaker, rng)
    return [pick] if pick else []


def check_moderator_pick(pick: str, participants: Sequence[Speaker], last_speaker: str | None) -> tuple[str | None, str | None]:
    """(persona id or FINISH, None) for a valid pick, else (None, the error to send back)."""
    if pick.strip().upper() == FINISH:
        return FINISH, None
    wanted = pick.strip().casefold()
    match = next((p for p in participants if wanted in (p.name.casefold(), p.id.casefold())), None)
    if match is None:
        names = ", ".join(p.name for p in participants)
        return None, f"{pick!r} is not a participant; choose one of {names} or {FINISH}"
    if match.id == last_speaker and len(participants) > 1:
        return None, f"{match.name} just spoke and may not answer itself; choose someone else or {FINISH}"
    return match.id, None


def single_participant_pick(participant: str, spoken_since_human: Sequence[str]) -> str:
    """With one participant there is nobody to choose between, so no moderator call."""
    return FINISH if participant in spoken_since_human else participant


def too_many_failures(failures: int, planned_turns: int) -> bool:
    """A round stops once more than half of its turns have failed."""
    return failures * 2 > max(planned_turns, 1)


NextStep = Literal["moderator", "persona", "end"]


def after_turn(
    *,
    moderated: bool,
    still_moderated: bool,
    queue: Sequence[str],
    turns_taken: int,
    max_turns: int,
    failures: int,
    planned_turns: int,
) -> NextStep:
    """Where a round goes once a persona's turn is over (delivered, or skipped after failing)."""
    if too_many_failures(failures, planned_turns):
        return "end"
    if not moderated:
        # One round and done: an unmoderated round never goes back to the moderator.
        return "persona" if queue else "end"
    if not still_moderated or turns_taken >= max_turns:
        return "end"
    return "moderator"
