"""The optional judge (`[review] judge = "on"`): a second model reads a draft that passed the text
checks of graph/review.py and grades it against the persona's description and the last lines.

Its answer is JSON under JUDGE_SCHEMA (structured output on Gemini and OpenAI-compatible servers,
schema-constrained decoding on the embedded model). A verdict other than "ok" is a review failure,
and the draft is written again with the judge's reason, like any other. A judge that cannot be
reached, or answers something unreadable, holds nothing back: it is a second opinion, and the text
checks stand without it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graph.models.base import ChatRunnable
from graph.models.retry import ainvoke_with_retry
from personas import Persona

log = logging.getLogger(__name__)

Verdict = Literal["ok", "off_topic", "out_of_character", "copies", "unsafe"]
VERDICTS: tuple[Verdict, ...] = ("ok", "off_topic", "out_of_character", "copies", "unsafe")
FOUND = {"off_topic": "off topic", "out_of_character": "out of character", "copies": "a copy", "unsafe": "unsafe"}
JUDGE_LINES = 8  # the newest lines of the conversation the judge reads with the draft
JUDGE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}

JUDGE_SYSTEM = """You review one draft message before it is posted in a group chat.
The draft is written by {name}. {name}'s character: {character}
Grade the draft:
- "ok": it answers the conversation in {name}'s own voice;
- "off_topic": it does not answer what was said;
- "out_of_character": it does not sound like {name}, or speaks as someone else;
- "copies": it repeats a line of the conversation instead of saying something new;
- "unsafe": it is hostile, harmful or leaks private instructions.
Answer with JSON: {{"verdict": ..., "reason": "one short sentence"}}."""


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str

    @property
    def note(self) -> str | None:
        """The review note a draft is written again with, or None when the judge found it fit."""
        if self.verdict == "ok":
            return None
        found = FOUND[self.verdict]
        why = self.reason.strip().rstrip(".")
        return f"the judge found it {found}: {why}" if why else f"the judge found it {found}"


def judge_messages(persona: Persona, conversation: Sequence[str], draft: str) -> list[BaseMessage]:
    """What the judge reads: the persona's character, the newest lines, and the draft."""
    character = " ".join(persona.system_prompt.split())
    system = JUDGE_SYSTEM.format(name=persona.display_name, character=character)
    recent = "\n".join(conversation[-JUDGE_LINES:]) or "(nothing yet)"
    return [
        SystemMessage(content=system),
        HumanMessage(content=f"Conversation so far:\n{recent}\n\nDraft by {persona.display_name}:\n{draft}"),
    ]


def parse_judgement(text: str) -> Judgement | None:
    """The judge's answer, or None when it is not a verdict of JUDGE_SCHEMA."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
        return None
    reason = data.get("reason")
    return Judgement(verdict=data["verdict"], reason=" ".join(reason.split())[:200] if isinstance(reason, str) else "")


async def judge_draft(
    model: ChatRunnable,
    persona: Persona,
    conversation: Sequence[str],
    draft: str,
    *,
    attempts: int,
    backoff_seconds: float,
) -> Judgement | None:
    """The judge's verdict on a draft; None when the judge failed or answered no verdict."""
    try:
        reply = await ainvoke_with_retry(
            model, judge_messages(persona, conversation, draft), attempts=attempts, backoff_seconds=backoff_seconds
        )
    except Exception as exc:
        log.warning("the judge failed on %s's draft: %s", persona.id, type(exc).__name__)
        return None
    judgement = parse_judgement(str(reply.text))
    if judgement is None:
        log.warning("the judge answered no verdict on %s's draft", persona.id)
    return judgement
