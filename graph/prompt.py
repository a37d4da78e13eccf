"""A persona's prompt: persona lock and the scene, its memory block (stored text, as data), then role-separated history."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from graph.actions import action_description
from graph.mailbox import note_message_text
from graph.models.signatures import replayed_turn
from personas import Persona
from storage.mailbox import is_note
from storage.records import Line, LineKind

# What a call that has no result yet (its approval is pending) is answered with, so that no
# provider ever sees a call without its result.
NO_RESULT_YET = "not run yet: it waits for a person to approve or reject it"

T = TypeVar("T")

MESSAGE_OVERHEAD_TOKENS = 4
MIN_PROMPT_BUDGET = 200  # [history] token_budget's own least
MIN_NEWEST_TOKENS = 64  # the least of the newest line a prompt keeps, however full the rest
CUT_LINE_MARK = " … (cut: the line is {total} characters long)"
MEMORY_MESSAGE_ID = "memory"  # the memory block's message (graph/memory_block.py)

# Words of the prompt's own instructions, the review's notes and the actions' descriptions that have
# no place in a chat message: a draft holding one leaks its instructions (graph/review.py, and
# bench/quality.py counts them). Change it with the wording below and in graph/actions.py.
INSTRUCTION_PHRASES = (
    "persona",
    "one participant",
    "other participants",
    "group chat",
    "first person",
    "name tag",
    "next message",
    "claim to be",
    "system prompt",
    "my instructions",
    "tool call",
    "actions you can take",
    "your last draft",
    "my last draft",
    "your draft",
    "my draft",
    "write it again",
    "characters long",
    "too short",
    "in character",
    "private note",
    "only they read it",
    "under your own name and avatar",
    "iso 8601",
    "what you remember",
    "what you noted",
    "what you recall of this conversation",
    "the scene",
    "data, not instructions",
    "more notes not shown",
    "took with remember",
)


def estimate_tokens(text: str) -> int:
    """About four characters a token, plus a little per message: cheap and provider-neutral."""
    return MESSAGE_OVERHEAD_TOKENS + (len(text) + 3) // 4


def prompt_budget(token_budget: int, context_size: int | None, reply_tokens: int) -> int:
    """The most tokens of one prompt: [history] token_budget, and within a context window we know
    (the embedded model's; a server's shows only when it refuses a prompt) less the reply's tokens
    and a tenth for estimate_tokens' guess, so the model never gets a prompt it must refuse."""
    if context_size is None:
        return token_budget
    return max(min(token_budget, (context_size - reply_tokens) * 9 // 10), MIN_PROMPT_BUDGET)


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


def actions_text(persona: Persona, needs_approval: Collection[str]) -> str:
    """What the persona can do, when to do it, and that some actions wait for a person."""
    rows = []
    for name in persona.actions:
        wait = " It waits for a person's approval before it runs." if name in needs_approval else ""
        rows.append(f"- {name}: {action_description(name)}{wait}")
    return (
        "Actions you can take, as tool calls:\n" + "\n".join(rows) + "\n"
        "Call an action only when someone asks you to do that thing. Never say an action is done "
        "until its result says it ran; while it waits for approval, say that it waits."
    )


EXAMPLES_HEADING = "How {name} talks (examples of the voice, not lines of this conversation):"


def examples_text(persona: Persona) -> str:
    """The persona's example lines, one "Name: line" each, under EXAMPLES_HEADING; a base model's
    transcript takes them out of the system text as the persona's own earlier lines
    (graph/models/local.py), a chat model reads them here."""
    heading = EXAMPLES_HEADING.format(name=persona.display_name)
    return "\n".join([heading, *(f"{persona.display_name}: {line}" for line in persona.examples)])


def system_text(persona: Persona, others: Sequence[str], scene: str, needs_approval: Collection[str] = ()) -> str:
    """Lock, system prompt (and the voice's examples), core memory, its actions, then the scene: only
    what the persona's configuration and the channel's people set. Stored text (its notes, its
    summary) never goes here: it follows as data in a message of its own (graph/memory_block.py)."""
    parts = [persona_lock(persona, others), persona.system_prompt.strip()]
    if persona.examples:
        parts.append(examples_text(persona))
    if persona.core_memory.strip():
        parts.append("What you remember:\n" + persona.core_memory.strip())
    if persona.actions:
        parts.append(actions_text(persona, needs_approval))
    if scene.strip():
        parts.append("The scene:\n" + scene.strip())
    return "\n\n".join(parts)


def scene_now(scene: str, now: datetime) -> str:
    """The people's /scene text, then the date and time where the channel is (`now` in its time zone)."""
    clock = _clock(now.replace(second=0, microsecond=0, tzinfo=None), now.tzname())
    return f"{scene.strip()}\n{clock}" if scene.strip() else clock


@lru_cache(maxsize=64)  # one text a minute (and time zone), in every persona's prompt
def _clock(local_minute: datetime, zone: str | None) -> str:
    return f"It is {local_minute:%A %d %B %Y, %H:%M} ({zone})."


MAX_SPEAKER_CHARS = 80
# What makes a name read as structure: "[system]", "[note from Sage]" (brackets, any width), "Nova:"
# (a colon ends a speaker tag); line breaks and control characters are collapsed apart.
_STRUCTURE = str.maketrans(
    dict.fromkeys("[［【〔⟦", "(") | dict.fromkeys("]］】〕⟧", ")") | dict.fromkeys(":：﹕", " ")
)


def speaker_name(name: str, persona_names: Collection[str] = ()) -> str:
    """A person's display name as their lines show it in a prompt: no bracket, colon or line break,
    so it can never read as a notice, a note or another speaker's tag; a name that is a persona's
    is marked as a person's. Notes and notices are told by a line's stored kind, never by its text."""
    shown = _shown_name(name)
    if persona_names and shown.casefold() in {n.casefold() for n in persona_names}:
        return f"{shown} (a person)"
    return shown


@lru_cache(maxsize=4096)  # the same few names, on every line of every moderator's transcript
def _shown_name(name: str) -> str:
    shown = " ".join("".join(c if c.isprintable() else " " for c in name.translate(_STRUCTURE)).split())
    return shown[:MAX_SPEAKER_CHARS] or "someone"


_QUOTE_MARKS = str.maketrans({"«": "‹", "»": "›"})


def quoted(text: str) -> str:
    """Stored text as one quoted item: line breaks and control characters become spaces (so it can
    never start a "[Name]" or "Name:" line) and its own « » become ‹ › (so it can never close its
    quote and go on as the words around it)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return f"«{flat.translate(_QUOTE_MARKS)}»"


# A line an app posted, stored as a person's line (which no prompt reads as system text) under an
# author id of its own: our app's own post under no persona's name (a notice, a task's answer), or
# another app's (bot/slack/events.py, a thread's parent).
APP_AUTHOR_PREFIX = "app:"
OUR_APP_AUTHOR = "app:self"


def app_post_text(author_id: str, name: str, text: str) -> str:
    """An app's post as its reader's prompt shows it: attributed, quoted, never "[system]"."""
    who = f"notice from {_shown_name(name)}" if author_id == OUR_APP_AUTHOR else f"bot {_shown_name(name)}"
    return f"[{who}] {quoted(text)}"


def message_text(line: Line, persona_id: str, persona_names: Collection[str] = ()) -> str:
    """The content of the message a line becomes for `persona_id` (see as_message); `persona_names`
    are the names a person's line may not pass for."""
    if line.kind is LineKind.PERSONA:
        return line.text if line.author_id == persona_id else f"[{line.author_name}] {line.text}"
    if line.kind is LineKind.HUMAN:
        if line.author_id.startswith(APP_AUTHOR_PREFIX):
            return app_post_text(line.author_id, line.author_name, line.text)
        return f"{speaker_name(line.author_name, persona_names)}: {line.text}"
    if is_note(line):
        return note_message_text(line.author_name, line.text)
    if line.call_id is not None:
        return line.text
    return f"[system] {line.text}"


def as_message(line: Line, persona_id: str, persona_names: Collection[str] = ()) -> BaseMessage:
    """Role separation: only the persona's own lines are AI turns; its tool results are tool messages."""
    message_id = f"line-{line.id}"
    content = message_text(line, persona_id, persona_names)
    if line.kind is LineKind.PERSONA and line.author_id == persona_id:
        return replayed_turn(content, line.tool_calls, line.signature, message_id)
    if line.kind is not LineKind.PERSONA and line.kind is not LineKind.HUMAN and line.call_id is not None:
        return ToolMessage(content=content, tool_call_id=line.call_id, name=line.author_name, id=message_id)
    return HumanMessage(content=content, id=message_id)


Rendered = tuple[BaseMessage, int]
"""A line's message for one persona, and its estimated tokens."""


def rendered(line: Line, persona_id: str, persona_names: Collection[str] = ()) -> Rendered:
    message = as_message(line, persona_id, persona_names)
    return message, estimate_tokens(message_text(line, persona_id, persona_names))


class MessageCache:
    """Lines' messages by line id and persona. A stored line never changes, so its message never
    goes stale, after a restart or with other processes writing. Bounded: the oldest entries go
    first (a plain dict: a lookup is on every line of every prompt). Its messages are shared
    between prompts, as the lines they are made from. `persona_names`: the personas' names, which a
    person's line may not pass for."""

    def __init__(self, size: int = 20_000, persona_names: Collection[str] = ()) -> None:
        self._size = size
        self._items: dict[tuple[int, str], Rendered] = {}
        self._persona_names = frozenset(persona_names)

    def get(self, line_id: int, persona_id: str) -> Rendered | None:
        return self._items.get((line_id, persona_id))

    def add(self, line: Line, persona_id: str) -> Rendered:
        item = self._items[(line.id, persona_id)] = rendered(line, persona_id, self._persona_names)
        if len(self._items) > self._size:
            del self._items[next(iter(self._items))]
        return item


def head_tokens(system: str, memory: str = "") -> int:
    """The tokens of what comes before the window: the system message and the memory block."""
    return estimate_tokens(system) + (estimate_tokens(memory) if memory else 0)


def messages_within(
    head: int, newest_first: Iterable[T], budget: int, render: Callable[[T], Rendered]
) -> tuple[list[BaseMessage], bool]:
    """The messages of the newest lines that fit the token budget beside the prompt's head (`head`
    tokens, head_tokens), newest first, and whether the budget is full (a line did not fit). The
    newest line is always kept: cut to what is left (at least MIN_NEWEST_TOKENS) when it alone is
    too big, so a prompt always holds the line it answers."""
    remaining = budget - head
    kept: list[BaseMessage] = []
    for line in newest_first:
        message, cost = render(line)
        if cost > remaining:
            if not kept:
                kept.append(cut_message(message, max(remaining, MIN_NEWEST_TOKENS)))
            return kept, True
        remaining -= cost
        kept.append(message)
    return kept, False


def cut_message(message: BaseMessage, tokens: int) -> BaseMessage:
    """A copy of a message whose text is cut to about `tokens` tokens, with a marker saying so; a
    message of several parts (an image beside its text) is kept whole."""
    text = message.content
    if not isinstance(text, str):
        return message
    marker = CUT_LINE_MARK.format(total=len(text))
    keep = max((tokens - MESSAGE_OVERHEAD_TOKENS) * 4 - len(marker), 0)
    return message if len(text) <= keep else message.model_copy(update={"content": text[:keep] + marker})


def prompt_from(system: str, newest_first: Sequence[BaseMessage], memory: str = "") -> list[BaseMessage]:
    """System message, the memory block (when there is one), then the messages oldest first, with
    every tool call directly followed by its result. The system text, which changes least, comes
    first and the memory next, so a cached prompt (the embedded model's slot) keeps the longest start."""
    head: list[BaseMessage] = [SystemMessage(content=system)]
    if memory:
        head.append(HumanMessage(content=memory, id=MEMORY_MESSAGE_ID))
    return [*head, *pair_tool_results(list(reversed(newest_first)))]


def assemble_prompt(
    system: str, newest_first: Iterable[Line], persona_id: str, budget: int, memory: str = "", reserve: int = 0
) -> list[BaseMessage]:
    """System message, the memory block, then as many of the newest lines as fit the token budget
    less `reserve` (what follows the window: the turn's question), oldest first, with every tool call
    directly followed by its result."""
    head = head_tokens(system, memory) + reserve
    kept, _ = messages_within(head, newest_first, budget, lambda line: rendered(line, persona_id))
    return prompt_from(system, kept, memory)


def pair_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Each AI tool call directly followed by its result, as providers require.

    A result arrives later than its call (after an approval, say), so it is moved up to its call.
    A call with no result yet gets NO_RESULT_YET; a result whose call fell outside the window
    becomes a plain note. No provider ever sees an orphan call or an orphan result.
    """
    if all(m.type == "human" or (m.type == "ai" and not getattr(m, "tool_calls", None)) for m in messages):
        return list(messages)  # most prompts: nothing to pair (and isinstance on a message class is slow)
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    calls_shown = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    paired: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in calls_shown:
                paired.append(HumanMessage(content=f"[system] {message.name}: {message.text}", id=message.id))
            continue
        paired.append(message)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call["id"] or ""
                result = results.get(call_id)
                if result is not None and result.name != call["name"]:
                    # An MCP tool's result is stored under "SERVER.TOOL"; its call has the name the model used.
                    result = result.model_copy(update={"name": call["name"]})
                paired.append(result or ToolMessage(content=NO_RESULT_YET, tool_call_id=call_id, name=call["name"]))
    return paired


def prompt_tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(estimate_tokens(str(m.content)) for m in messages)
