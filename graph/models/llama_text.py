"""How a conversation becomes what a llama.cpp model reads: a transcript for a base model to continue,
or a system prompt and user/assistant turns for an instruct model's chat template."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from graph.moderator import DECISION_CUE
from graph.prompt import EXAMPLES_HEADING
from graph.turn_text import split_turn

T = TypeVar("T")

JSON_CUE = DECISION_CUE  # the moderator's worked examples end the same way
_EXAMPLES = re.compile(re.escape(EXAMPLES_HEADING).replace(re.escape("{name}"), ".+") + "\n")
_BRACKET_TAG = re.compile(r"\[([^\]]+)\]\s*(.*)")
CHAT_LINE_LENGTH = "Reply with one or two short sentences, as one line of a group chat."
Turn = tuple[str, str]  # (role, text)


def render_transcript(messages: Sequence[BaseMessage], ai_name: str) -> tuple[str, list[str]]:
    """(system notes, one transcript line per message), ready for a base model to continue."""
    header = "\n\n".join(m.text.strip() for m in messages if isinstance(m, SystemMessage) and m.text.strip())
    # A persona's examples are its own earlier lines for a base model: the transcript opens with them.
    parts = header.split("\n\n")
    examples = [p for p in parts if _EXAMPLES.match(p)]
    header = "\n\n".join(p for p in parts if p not in examples)
    lines: list[str] = [line for p in examples for line in p.splitlines()[1:]]
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        text = " ".join(message.text.split())  # one line per message
        if not text:
            continue
        if isinstance(message, ToolMessage):
            text = f"[system] {message.name}: {text}"  # an action's result, as a note
        tagged = _BRACKET_TAG.fullmatch(text)
        if tagged and tagged.group(1).casefold() != "system":
            text = f"{tagged.group(1)}: {tagged.group(2)}"
        elif isinstance(message, AIMessage) and not tagged:
            text = f"{message.name or ai_name}: {text}"
        lines.append(text)
    return header, lines


def render_turns(messages: Sequence[BaseMessage], speaker: str) -> tuple[str, list[Turn]]:
    """(system prompt, user/assistant turns) for a chat template: the persona's own lines are its
    (assistant) turns; people's lines, other personas' lines and notes are user turns, consecutive
    ones joined into one."""
    system = "\n\n".join(m.text.strip() for m in messages if isinstance(m, SystemMessage) and m.text.strip())
    turns: list[Turn] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        text = " ".join(message.text.split())
        if not text:
            continue
        if isinstance(message, ToolMessage):
            text = f"[system] {message.name}: {text}"
        role = "assistant" if isinstance(message, AIMessage) and not _BRACKET_TAG.fullmatch(text) else "user"
        if role == "user" and turns and turns[-1][0] == "user":
            turns[-1] = ("user", f"{turns[-1][1]}\n{text}")
        else:
            turns.append((role, text))
    return system, turns


def persona_chat(messages: Sequence[BaseMessage], speaker: str) -> tuple[str, list[Turn]]:
    """The system prompt and turns a persona's reply is asked for with on the chat-template path.
    The newest turn ends with the turn's question when the prompt has one, else by telling the
    persona it is its turn: without it, a small instruct model
    often goes on with the transcript as someone else ("You: Great idea!", "[Nova] ..."). A reply
    written just after the persona's tools answered is told to pass their answer on: the model
    otherwise reads the result as someone's news and thanks them for it."""
    history, asked = split_turn(messages)
    system, turns = render_turns(history, speaker)
    spoken = [m for m in history if not isinstance(m, SystemMessage) and m.text.strip()]
    if asked is not None:  # the turn's question (graph/turn_text.py) says whose turn it is
        cue = " ".join(asked.text.split())
    elif spoken and isinstance(spoken[-1], ToolMessage):
        cue = relay_cue(speaker)
    else:
        cue = turn_cue(speaker)
    if turns and turns[-1][0] == "user":
        turns[-1] = ("user", f"{turns[-1][1]}\n{cue}")
    else:
        turns.append(("user", cue))
    return (f"{system}\n\n{CHAT_LINE_LENGTH}" if system else CHAT_LINE_LENGTH), turns


def turn_cue(speaker: str) -> str:
    return f"[system] Your turn, {speaker}: reply as {speaker}, without a name tag."


def relay_cue(speaker: str) -> str:
    return f"[system] Your turn, {speaker}: answer the request above with what your tool returned, in your own words."


def render_prompt(messages: Sequence[BaseMessage], speaker: str | None = None) -> str:
    """The full prompt: the persona's turn cue for a speaker, else the JSON decision cue."""
    header, lines = render_transcript(messages, ai_name=speaker or "Assistant")
    return join_lines(header, lines, f"{speaker}:" if speaker else JSON_CUE)


def join_lines(header: str, lines: Sequence[str], final_line: str) -> str:
    body = "\n".join([*lines, final_line])
    return f"{header}\n\n{body}" if header else body


def trim_to_fit(items: list[T], size: Callable[[list[T]], int], error: dict[str, Any], max_tokens: int) -> list[T]:
    """Drop the oldest items so the prompt leaves room for max_tokens, using the error's token count.

    Characters per token vary along the prompt, hence the 10% margin.
    """
    chars_per_token = size(items) / max(int(error["n_prompt_tokens"]), 1)
    budget_chars = 0.9 * (int(error["n_ctx"]) - max_tokens) * chars_per_token
    kept = list(items)
    while kept and size(kept) > budget_chars:
        kept.pop(0)
    return kept
