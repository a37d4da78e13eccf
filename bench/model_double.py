"""The one model double both sides of the AutoGen comparison call (bench/pairings.py): every call,
a persona's reply, a pick of the next speaker or a summary, costs the same fixed wall time of busy
CPU before its fixed answer, so a side pays for exactly the calls it makes and nothing else."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import BaseMessage

from bench.harness import SUMMARY, BenchModels
from graph.models.base import ChatRunnable
from graph.prompt import MEMORY_MESSAGE_ID
from tests.fake_models import CallbackChatModel, FakeModels, fresh_reply

MODEL_COST = 0.0001  # seconds per call: small beside a turn's engine work, so the ratio stays about the engines


class ModelDouble:
    def __init__(self, cost: float = MODEL_COST) -> None:
        self.cost = cost
        self.calls = 0
        self.replies = 0

    def spend(self) -> None:
        """One call's cost, spent on this thread: a busy loop holds its time whatever the event loop's
        timer resolution, where a sleep would add a wake-up of its own."""
        self.calls += 1
        until = time.perf_counter() + self.cost
        while time.perf_counter() < until:
            pass

    def reply(self) -> str:
        """A persona's reply: fixed words and eight of its own, as no review would call a copy."""
        self.spend()
        self.replies += 1
        return fresh_reply("Reply", self.replies)

    def pick(self, name: str) -> str:
        """The selector's or the moderator's answer, decided by the benchmark's script."""
        self.spend()
        return name


class DoubleModels(BenchModels):
    """Roundtable's models on the shared double: persona replies, the moderator's scripted decisions
    and the summaries all pay its cost per call, and nothing is timed apart from the round. `window`
    is how many history messages the last persona prompt held: the bound AutoGen's contexts get."""

    def __init__(self, double: ModelDouble) -> None:
        super().__init__()
        self.double = double
        self.window = 0

    async def _answer(self, speaker: str, messages: list[BaseMessage]) -> str:
        self.window = sum(1 for m in messages if m.type != "system" and m.id != MEMORY_MESSAGE_ID)
        return self.double.reply()

    async def _moderator(self, speaker: str, messages: list[BaseMessage]) -> str:
        return self.double.pick(await super()._moderator(speaker, messages))

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        """The scripted summaries, on the loop as the other calls are (no worker thread of its own)."""
        if SUMMARY not in self._models:
            scripted = FakeModels.summary_model(self, schema, max_tokens)

            async def summarise(speaker: str, messages: list[BaseMessage]) -> Any:
                self.double.spend()
                return scripted.invoke(messages)

            self._models[SUMMARY] = CallbackChatModel(speaker=SUMMARY, reply=summarise)
        return self._models[SUMMARY]

    def _timed(self, model: ChatRunnable) -> ChatRunnable:
        return model  # the round is timed whole, as AutoGen's is
