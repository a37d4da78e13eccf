"""The words of a persona's turn: the question put to it, after its history.

A persona reads who asked what of it ("Ana asked you, Sage: «any book recommendations?»"), its own
angle on it (its `stance`), and what the round has heard already, as the last message of its prompt:
the last user turn of the embedded and OpenAI-compatible chat templates, the last content for
Gemini. A draft the review sent back comes with the review's note in that same message, as an
instruction about the draft: never as a line of the channel, so no later turn can answer it, and
never stored, so it is in no persona's history.

The person's words are quoted as any stored text is (graph.prompt.quoted, speaker_name): data, never
instructions. Which turns may pass is graph.turn_rules'; this module only says it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage, HumanMessage

from graph.prompt import MAX_SPEAKER_CHARS, estimate_tokens, quoted, speaker_name

TURN_MESSAGE_ID = "turn"  # the turn's message: no line of the channel, so no stored line has its id
RETRY_MESSAGE_ID = "turn-retry"  # the same message when the review sent the last draft back
PASS_WORD = "PASS"
MAX_QUOTED_CHARS = 300  # of the person's line in the question: the whole line is in the history above
RETRY_NOTE = "Your last draft was not posted: {reason}. Write a new reply."
RELAY = "Your tools answered above: pass on what they returned, in your own words."
MAX_REASON_CHARS = 200  # the review's longest reason is about 130 characters, the judge's at most 100


@dataclass(frozen=True, slots=True)
class TurnAsk:
    """What a persona's turn answers, as the round knows it."""

    speaker: str  # the persona's display name
    asker: str  # the person whose line it answers ("" in a follow-up after an approval)
    line: str  # their words
    addressed: bool  # the line named this persona
    stance: str = ""  # how this persona answers, from its file
    answered_by: tuple[str, ...] = ()  # personas who spoke since the line, in order
    may_pass: bool = False  # graph.turn_rules.may_pass
    relay: bool = False  # its tools just answered: the reply passes their answer on
    retry_reason: str = ""  # why the review sent the last draft back


def question(ask: TurnAsk, persona_names: Sequence[str] = ()) -> str:
    """The turn's question, in plain words (see the module's docstring)."""
    name = ask.speaker
    parts = [_asked(ask, persona_names)]
    if ask.relay:
        parts.append(RELAY)
    elif ask.answered_by:
        parts.append(f"{_names(ask.answered_by)} answered already: add only what they did not say.")
    if ask.stance.strip():
        parts.append(f"Answer the way {name} does: {' '.join(ask.stance.split())}.".replace("..", "."))
    if ask.may_pass:
        parts.append(f"If you have nothing new to add, reply with the single word {PASS_WORD}.")
    parts.append(f"Write only {name}'s reply, as one short chat line, without a name tag.")
    if ask.retry_reason:
        parts.append(RETRY_NOTE.format(reason=ask.retry_reason))
    return " ".join(parts)


def _asked(ask: TurnAsk, persona_names: Sequence[str]) -> str:
    name = ask.speaker
    if not ask.line.strip():
        return f"It is your turn, {name}."
    words = quoted(ask.line[:MAX_QUOTED_CHARS] + ("…" if len(ask.line) > MAX_QUOTED_CHARS else ""))
    asker = speaker_name(ask.asker, persona_names) if ask.asker.strip() else "Someone"
    if ask.addressed:
        return f"{asker} asked you, {name}: {words}"
    return f"{asker} said to the channel: {words} You were picked to answer it, {name}."


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def question_tokens_at_most(ask: TurnAsk) -> int:
    """The most tokens the turn's question can take once the round's picks are made: the longer of
    its two openings (addressed or picked), the pass word offered, and a tool's relay. A prompt's
    window leaves room for it, so the whole turn stays within its budget."""
    # A person's name a persona has is shown with " (a person)" after it (graph.prompt.speaker_name).
    widest = replace(ask, asker=f"{ask.asker} (a person)", addressed=False, may_pass=True, relay=False)
    return estimate_tokens(question(widest)) + estimate_tokens(RELAY)


def any_question(speaker: str, stance: str) -> TurnAsk:
    """The longest question a persona can be put (the longest line, names and retry note): what
    `roundtable prompt` leaves room for, knowing no round."""
    return TurnAsk(
        speaker=speaker,
        asker="x" * MAX_SPEAKER_CHARS,
        line="x" * (MAX_QUOTED_CHARS + 1),
        addressed=False,
        stance=stance,
        answered_by=("x" * MAX_SPEAKER_CHARS,) * 3,
        retry_reason="x" * MAX_REASON_CHARS,
    )


def turn_message(ask: TurnAsk, persona_names: Sequence[str] = ()) -> HumanMessage:
    """The turn's question as the prompt's last message, marked by its id (no line has it)."""
    message_id = RETRY_MESSAGE_ID if ask.retry_reason else TURN_MESSAGE_ID
    return HumanMessage(content=question(ask, persona_names), id=message_id)


def is_turn_message(message: BaseMessage) -> bool:
    return message.id in (TURN_MESSAGE_ID, RETRY_MESSAGE_ID)


def split_turn(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], BaseMessage | None]:
    """The prompt without its turn message, and the turn message (None when it has none: a prompt
    `roundtable prompt` prints, a moderator's or a judge's)."""
    if messages and is_turn_message(messages[-1]):
        return list(messages[:-1]), messages[-1]
    return list(messages), None


# The fixed words of the turn's text, which no chat line holds: a draft that says them leaks its
# instructions (graph/nodes.py reviews drafts with these beside graph.prompt.INSTRUCTION_PHRASES).
TURN_PHRASES = (
    "said to the channel",
    "picked to answer",
    "answered already",
    "add only what they did not say",
    "pass on what they returned",
    "the single word pass",
    "one short chat line",
    "write a new reply",
    "was not posted",
)
