"""Test doubles for the model layer: LangChain chat models whose replies a test decides."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.models.base import ChatRunnable
from graph.models.scripted import Directives, ScriptedSummaryModel
from personas import Persona

Reply = Callable[[str, list[BaseMessage]], Awaitable[str | AIMessage]]


class CallbackChatModel(BaseChatModel):
    """Answers each call with whatever `reply(speaker, messages)` returns (or raises)."""

    speaker: str
    reply: Any  # Reply; pydantic cannot validate the callable's signature

    @property
    def _llm_type(self) -> str:
        return "test-callback"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("async only")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = await self.reply(self.speaker, messages)
        message = answer if isinstance(answer, AIMessage) else AIMessage(content=answer)
        return ChatResult(generations=[ChatGeneration(message=message)])


class FakeModels:
    """Models whose persona replies and moderator decisions come from the test, with every call logged."""

    description = "test fake"

    def __init__(self, persona_reply: Reply, moderator_decisions: Sequence[dict[str, str] | str] = ()) -> None:
        self.persona_reply = persona_reply
        self.decisions = list(moderator_decisions)
        self.calls: list[tuple[str, list[BaseMessage]]] = []

    async def _persona(self, speaker: str, messages: list[BaseMessage]) -> str:
        self.calls.append((speaker, messages))
        return await self.persona_reply(speaker, messages)

    async def _moderator(self, speaker: str, messages: list[BaseMessage]) -> str:
        self.calls.append((speaker, messages))
        decision = self.decisions.pop(0) if self.decisions else {"next_speaker": "FINISH", "reason": "script ended"}
        return decision if isinstance(decision, str) else json.dumps(decision)

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        return CallbackChatModel(speaker=persona.id, reply=self._persona)

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        return CallbackChatModel(speaker="moderator", reply=self._moderator)

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        """The scripted double's summaries (graph/models/scripted.py), not logged with the calls."""
        return ScriptedSummaryModel(directives=Directives())

    def count(self, speaker: str) -> int:
        return sum(1 for s, _ in self.calls if s == speaker)


def fresh_reply(text: str, number: int) -> str:
    """`text`, then eight words no other number gives: replies that are no copies of each other,
    which the review would never post (graph/review.py)."""
    words = (hashlib.blake2b(f"{number}-{i}".encode(), digest_size=3).hexdigest() for i in range(8))
    return f"{text} {' '.join(words)}."


def varied_reply(text: str) -> Reply:
    """`text` with words of its own on each call: personas that say much the same, never a copy."""
    calls = 0

    async def reply(speaker: str, messages: list[BaseMessage]) -> str:
        nonlocal calls
        calls += 1
        return fresh_reply(text, calls)

    return reply


def fixed_reply(text: str) -> Reply:
    async def reply(speaker: str, messages: list[BaseMessage]) -> str:
        return text

    return reply
