"""A persona's prompt: persona lock, its own notes and the scene, then role-separated history."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from personas import Persona
from storage.records import Line, LineKind

MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(text: str) -> int:
    """About four characters a token, plus a little per message: cheap and provider-neutral."""
    return MESSAGE_OVERHEAD_TOKENS + (len(text) + 3) // 4


def max_lines_within(budget: int) -> int:
    """No message costs less than MESSAGE_OVERHEAD_TOKENS + 1, which bounds the window to read."""
    return budget // (MESSAGE_OVERHEAD_TOKENS + 1) + 1


def persona_lock(persona: Persona, others: Sequence[str]) -> str:
    others_text = ", ".join(others) if others else "nobody else yet"
    return (
        f"You are {persona.display_name}, one participant in a group chat. "
        f"Other participants: {others_text}. "
        f"Write only {persona.display_name}'s next message, in the first person. "
        "Never write lines for other participants, never start with a name tag, "
        "and never claim to be anyone else."
    )


def system_text(persona: Persona, others: Sequence[str], scene: str) -> str:
    parts = [persona_lock(persona, others), persona.system_prompt.strip()]
    if persona.core_memory.strip():
        parts.append("What you remember:\n" + persona.core_memory.strip())
    if scene.strip():
        parts.append("The scene:\n" + scene.strip())
    return "\n\n".join(parts)


def as_message(line: Line, persona_id: str) -> BaseMessage:
    """Role separation: only the persona's own lines are AI turns."""
    message_id = f"line-{line.id}"
    if line.kind is LineKind.PERSONA and line.author_id == persona_id:
        return AIMessage(content=line.text, id=message_id)
    if line.kind is LineKind.PERSONA:
        return HumanMessage(content=f"[{line.author_name}] {line.text}", id=message_id)
    if line.kind is LineKind.HUMAN:
        return HumanMessage(content=f"{line.author_name}: {line.text}", id=message_id)
    return HumanMessage(content=f"[system] {line.text}", id=message_id)


def assemble_prompt(system: str, newest_first: Iterable[Line], persona_id: str, budget: int) -> list[BaseMessage]:
    """System message, then as many of the newest lines as fit the token budget, oldest first."""
    remaining = budget - estimate_tokens(system)
    kept: list[BaseMessage] = []
    for line in newest_first:
        message = as_message(line, persona_id)
        cost = estimate_tokens(str(message.content))
        if cost > remaining:
            break
        remaining -= cost
        kept.append(message)
    return [SystemMessage(content=system), *reversed(kept)]


def prompt_tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(estimate_tokens(str(m.content)) for m in messages)
