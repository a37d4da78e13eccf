"""A persona's prompt, read from storage in pages: exactly what the persona receives, and also what
`python -m bot prompt` prints. Lines rendered for an earlier prompt are kept (MessageCache), and
how many rows the last prompt needed is the first guess for the next one. Where the window a
persona last saw begins is kept until the memory keeper asks for it, which saves it building
every persona's prompt again after every round."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from langchain_core.messages import BaseMessage

from graph.deps import EngineDeps
from graph.floor import present_speakers
from graph.memory import note_scope
from graph.memory_block import memory_block, memory_share
from graph.policy import is_sensitive
from graph.prompt import (
    MessageCache,
    Rendered,
    head_tokens,
    max_lines_within,
    messages_within,
    prompt_from,
    scene_now,
    system_text,
)
from graph.routing import Speaker
from graph.turn_text import any_question, question_tokens_at_most
from personas import Persona
from storage import channels, history, memory

FIRST_PAGE = 64  # rows read first for a prompt nothing is known about yet
PAGE_MARGIN = 8  # rows read beyond last time's prompt, which is usually enough for the next one
MAX_KEPT = 10_000  # entries in each per (channel, persona) dict


class PromptPages:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        # (channel, persona) -> rows to read first for its next prompt: only a guess, never a result.
        self._page_hints: dict[tuple[str, str], int] = {}
        self._messages = MessageCache(persona_names=[p.display_name for p in deps.personas.values()])
        # (channel, persona) -> the oldest line of the last window built for it, until window_start takes it.
        self._window_starts: dict[tuple[str, str], int] = {}

    async def persona_prompt(self, channel_key: str, persona: Persona) -> list[BaseMessage]:
        """Exactly what the persona receives: also what `python -m bot prompt` prints."""
        messages, _ = await self.prompt_and_speakers(channel_key, persona)
        return messages

    async def prompt_and_speakers(
        self, channel_key: str, persona: Persona, question_tokens: int | None = None
    ) -> tuple[list[BaseMessage], list[Speaker]]:
        """The persona's prompt, leaving `question_tokens` of the budget for the turn's question that
        follows it (graph/turn_text.py; by default room for the longest), and who is present."""
        channel = await channels.get_channel(self.deps.db, channel_key)
        speakers = await present_speakers(self.deps, channel_key)
        others = [s.name for s in speakers if s.id != persona.id]
        budget = self.deps.settings.token_budget
        needs_approval = [a for a in persona.actions if is_sensitive(a, self.deps.policy.sensitive)]
        scope = note_scope(channel_key, self.deps.settings.memory.share_notes)
        system = system_text(
            persona,
            others,
            scene_now(channel.scene if channel else "", datetime.now(ZoneInfo(self.deps.settings.timezone))),
            needs_approval,
        )
        recall = memory_block(
            persona.display_name,
            await memory.notes(self.deps.db, scope, persona.id),
            await memory.summary(self.deps.db, channel_key, persona.id),
            memory_share(budget),
            here=channel_key,
        )
        if question_tokens is None:
            question_tokens = question_tokens_at_most(any_question(persona.display_name, persona.stance))
        head = head_tokens(system, recall) + question_tokens  # the budget holds the question too
        newest_first = await self._messages_within_budget(channel_key, persona.id, head, budget)
        if (oldest := oldest_line_id(newest_first)) is not None:
            _remember(self._window_starts, (channel_key, persona.id), oldest)
        return prompt_from(system, newest_first, recall), speakers

    async def window_start(self, channel_key: str, persona: Persona) -> int | None:
        """The oldest line in the persona's window (None when it holds none): as the persona last saw
        it, when a prompt was built for it since the last ask (the window has moved on by at most this
        round's lines, so whatever lies before it has surely left), else from a prompt built now."""
        key = (channel_key, persona.id)
        if (seen := self._window_starts.pop(key, None)) is not None:
            return seen
        await self.prompt_and_speakers(channel_key, persona)
        return self._window_starts.pop(key, None)

    async def _messages_within_budget(
        self, channel_key: str, persona_id: str, head: int, budget: int
    ) -> list[BaseMessage]:
        """The messages of the newest lines delivered to the persona that fit the budget beside the
        prompt's head (`head` tokens), newest
        first, read in pages until the budget is full: the same as assemble_prompt over
        max_lines_within(budget) rows read at once."""
        limit = max_lines_within(budget)
        hint = (channel_key, persona_id)
        page = min(limit, self._page_hints.pop(hint, FIRST_PAGE))
        ids: list[int] = []
        known: dict[int, Rendered] = {}
        before = None
        while True:
            # Ids first: most lines were rendered for an earlier prompt, and only the others are read.
            page_ids = await history.recent_line_ids_for(
                self.deps.db, channel_key, persona_id, limit=page, before_id=before
            )
            for line_id in page_ids:
                if (item := self._messages.get(line_id, persona_id)) is not None:
                    known[line_id] = item
            for line in await history.lines_by_id(self.deps.db, [i for i in page_ids if i not in known]):
                known[line.id] = self._messages.add(line, persona_id)
            ids += page_ids
            kept, full = messages_within(head, ids, budget, known.__getitem__)
            if full or len(page_ids) < page or len(ids) >= limit:
                break
            before = page_ids[-1]
            page = min(limit - len(ids), page * 2)
        # Next time, one page should do: a prompt's length changes little from one turn to the next.
        _remember(self._page_hints, hint, len(kept) + PAGE_MARGIN)
        return kept


def oldest_line_id(newest_first: Sequence[BaseMessage]) -> int | None:
    """The oldest stored line among a window's messages, newest first (their ids are "line-N"), or None."""
    return next((int(m.id[5:]) for m in reversed(newest_first) if m.id and m.id.startswith("line-")), None)


def _remember(kept: dict[tuple[str, str], int], key: tuple[str, str], value: int) -> None:
    """Set kept[key], dropping the oldest entry past MAX_KEPT (one per channel and persona in use)."""
    kept[key] = value
    if len(kept) > MAX_KEPT:
        del kept[next(iter(kept))]
