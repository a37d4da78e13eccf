"""Who speaks next and when a round stops: pure functions, no I/O."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

FINISH = "FINISH"


@dataclass(frozen=True)
class Speaker:
    id: str
    name: str
    talkativeness: float


@lru_cache(maxsize=1024)
def _whole_word(label: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(label)}(?!\w)", flags=re.IGNORECASE)


def addressed(text: str, mentions: Sequence[str], participants: Sequence[Speaker]) -> list[str]:
    """Participants addressed by @mention or by name (whole word, any case), in the order mentioned.

    Platform @mentions come first, in their order; names follow by their position in the text.
    """
    return list(_addressed(text, tuple(mentions), tuple(participants)))


@lru_cache(maxsize=256)  # every pick and every turn of a round asks about the same line
def _addressed(text: str, mentions: tuple[str, ...], participants: tuple[Speaker, ...]) -> tuple[str, ...]:
    by_id = {p.id: p for p in participants}
    ordered = [m for m in mentions if m in by_id]
    found: list[tuple[int, str]] = []
    for p in participants:
        positions = [match.start() for label in {p.name, p.id} for match in _whole_word(label).finditer(text)]
        if positions:
            found.append((min(positions), p.id))
    for _, persona_id in sorted(found):
        if persona_id not in ordered:
            ordered.append(persona_id)
    return tuple(ordered)


def listens_only(speaker: Speaker) -> bool:
    """Talkativeness 0 (its file's, or /persona quiet here): it reads and remembers, and speaks only when named."""
    return speaker.talkativeness <= 0


def natural_pick(participants: Sequence[Speaker], last_speaker: str | None, rng: random.Random) -> str | None:
    """The one persona that answers an unaddressed message with moderation off.

    SillyTavern's natural order, cut to its first speaker: each participant, in shuffled order, rolls
    against its talkativeness and the first to win speaks; the last speaker may not answer itself
    right away; when nobody wins, one random participant replies. A persona that listens only
    (talkativeness 0) is never picked: it answers only when named.
    """
    participants = [p for p in participants if not listens_only(p)]
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


# -- the moderator's options -------------------------------------------------------------------------

FOLLOW_UP_TURNS = 2  # turns the moderator may add once everyone it had to hear from has spoken

# Reasons the code gives for the picks it makes without asking the model.
WAS_ADDRESSED = "was addressed"
HAS_NOT_SPOKEN = "has not spoken since the last human message"
EVERYONE_SPOKE = "everyone has had their say since the last human message"
ROUND_IS_FULL = "the round has had its turns"
FALLBACK_PICK = "fallback to natural order after an invalid decision"
FALLBACK_FINISH = "finished after an invalid decision"


@dataclass(frozen=True)
class ModeratorOptions:
    """What the moderator may decide next. A forced decision needs no model call."""

    choices: tuple[str, ...]  # persona ids, and FINISH once the round may end
    forced_reason: str = ""  # set when there is exactly one choice and the code makes it

    @property
    def forced(self) -> str | None:
        return self.choices[0] if self.forced_reason else None

    @property
    def may_finish(self) -> bool:
        return FINISH in self.choices


def _forced(pick: str, reason: str) -> ModeratorOptions:
    return ModeratorOptions((pick,), reason)


def moderator_options(
    participants: Sequence[Speaker],
    addressed_ids: Sequence[str],
    had_turn: Sequence[str],
    last_speaker: str | None,
    turns_taken: int,
) -> ModeratorOptions:
    """Who the moderator may pick next in a moderated round, so that every round ends on time.

    1. Addressed personas who have not had their turn since the human line speak first, in mention
       order: forced.
    2. The round's quorum is the addressed personas, or everyone present when nobody was addressed.
       Until the quorum has had its turn the moderator chooses among those still waiting, and FINISH
       is not offered; with one left, that one is forced.
    3. Then FINISH is offered beside everyone but the last speaker, for FOLLOW_UP_TURNS more turns.
    4. After that, or when nobody else is left, FINISH is forced.
    A persona that listens only (talkativeness 0) is a choice only when it was addressed.
    """
    present = [p.id for p in participants if not listens_only(p) or p.id in addressed_ids]
    waiting_addressed = [i for i in addressed_ids if i in present and i not in had_turn]
    if waiting_addressed:
        return _forced(waiting_addressed[0], WAS_ADDRESSED)
    quorum = [i for i in addressed_ids if i in present] or present
    waiting = [i for i in quorum if i not in had_turn]
    if len(waiting) == 1:
        return _forced(waiting[0], HAS_NOT_SPOKEN)
    if waiting:
        return ModeratorOptions(tuple(waiting))
    if turns_taken >= len(quorum) + FOLLOW_UP_TURNS:
        return _forced(FINISH, ROUND_IS_FULL)
    others = [i for i in present if i != last_speaker]
    if not others:
        return _forced(FINISH, EVERYONE_SPOKE)
    return ModeratorOptions((*others, FINISH))


def check_moderator_pick(
    pick: str, participants: Sequence[Speaker], options: ModeratorOptions
) -> tuple[str | None, str | None]:
    """(persona id or FINISH, None) for a pick among the options, else (None, the error to send back)."""
    by_name = {label.casefold(): p for p in participants for label in (p.name, p.id)}
    names = ", ".join(by_name[c].name if c in by_name else c for c in options.choices)
    wanted = pick.strip()
    if wanted.upper() == FINISH:
        if options.may_finish:
            return FINISH, None
        return None, f"{FINISH} is not possible yet: someone has not had their turn; choose one of {names}"
    match = by_name.get(wanted.casefold())
    if match is None:
        return None, f"{pick!r} is not a participant; choose one of {names}"
    if match.id not in options.choices:
        return None, f"{match.name} may not speak now; choose one of {names}"
    return match.id, None


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
    stopped: bool = False,
) -> NextStep:
    """Where a round goes once a persona's turn is over (delivered, or skipped after failing)."""
    if stopped or too_many_failures(failures, planned_turns):
        return "end"
    if not moderated:
        # One round and done: an unmoderated round never goes back to the moderator.
        return "persona" if queue else "end"
    if not still_moderated or turns_taken >= max_turns:
        return "end"
    return "moderator"


NOMINATED = "was named with /next"


def nominated_first(order: Sequence[str], nominee: str | None, present: Sequence[str]) -> list[str]:
    """A round's speakers with the persona named by /next first; a nominee not present is ignored."""
    if nominee is None or nominee not in present:
        return list(order)
    return [nominee, *(p for p in order if p != nominee)]


def with_invitees(
    options: ModeratorOptions, invitees: Sequence[str], team_size: int, team_cap: int
) -> ModeratorOptions:
    """The moderator may also invite a persona from the library (recruitment), while the team is
    below its cap and the decision is not forced."""
    if options.forced or not invitees or team_size >= team_cap:
        return options
    return ModeratorOptions((*options.choices, *invitees))


TurnStep = Literal["review", "persona", "deliver", "skip"]


def after_draft(*, turn_failed: bool) -> TurnStep:
    """Once the persona has answered (or its model failed): review the draft, or skip the turn."""
    return "skip" if turn_failed else "review"


def after_review(*, review_note: str, turn_failed: bool) -> TurnStep:
    """Once the draft is reviewed: ask the persona again with the note, post it, or skip the turn."""
    if review_note:
        return "persona"
    return "skip" if turn_failed else "deliver"


ToolStep = Literal["answer", "act", "limit"]


def after_tool_step(*, failed: bool, has_calls: bool, step: int, max_steps: int) -> ToolStep:
    """After one model step of a turn: its reply is the answer (no tool call, or the model failed),
    its calls run and the model is asked again, or the turn stops at [actions] max_steps model calls
    (the calls of the last one are not run: no model call would read their results)."""
    if failed or not has_calls:
        return "answer"
    return "limit" if step >= max_steps else "act"


def after_pick_and_turn(picked: bool, next_after_turn: NextStep) -> NextStep:
    """A graph step picks a speaker and runs its turn: with nobody picked the round is over,
    otherwise it goes where after_turn says."""
    return next_after_turn if picked else "end"


def first_pick(*, moderated: bool) -> Literal["moderator", "select"]:
    """Who picks a round's first speaker: the moderator, or the unmoderated order."""
    return "moderator" if moderated else "select"
