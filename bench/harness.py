"""What every engine benchmark phase shares: a timed fake model, a timing port and a throwaway app."""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.app import App, open_app
from bot.config import Config, load_config
from bot.inbound import Inbound
from bot.persistence import Persistence, open_persistence
from bot.timers import DurableTimers
from graph.actions import ActionCall
from graph.models.base import ChatRunnable
from personas import Persona
from storage.database import open_database
from storage.records import Approval
from tests.conftest import write_config
from tests.fake_models import CallbackChatModel, FakeModels, Reply, fresh_reply

ROOT = Path(__file__).resolve().parents[1]
REPLY = "A perfectly reasonable reply, long enough to pass review."
MODERATOR = "moderator"
SUMMARY = "summary"


class BenchModels(FakeModels):
    """FakeModels whose persona replies take `latency` seconds; time spent inside every model call is summed."""

    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(self._answer)
        self.latency = latency
        self.replies = 0
        self.model_seconds = 0.0
        self._models: dict[str, ChatRunnable] = {}  # one per speaker, as real providers reuse theirs

    async def _answer(self, speaker: str, messages: list[BaseMessage]) -> str:
        if self.latency:
            await asyncio.sleep(self.latency)
        self.replies += 1
        return fresh_reply("Reply", self.replies)

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        if persona.id not in self._models:
            self._models[persona.id] = self._timed(super().persona_model(persona, other_names, addressed=addressed))
        return self._models[persona.id]

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        if MODERATOR not in self._models:
            self._models[MODERATOR] = self._timed(super().moderator_model(choices))
        return self._models[MODERATOR]

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        """One summary model for every fold, as real providers reuse theirs; what the scripted double
        does to write a summary (a new instance, its sync _generate in a worker thread) is model time."""
        if SUMMARY not in self._models:
            scripted = super().summary_model(schema, max_tokens)

            async def summarise(speaker: str, messages: list[BaseMessage]) -> Any:
                return await scripted.ainvoke(messages)

            self._models[SUMMARY] = self._timed(CallbackChatModel(speaker=SUMMARY, reply=summarise))
        return self._models[SUMMARY]

    def _timed(self, model: ChatRunnable) -> ChatRunnable:
        """The same model, with the time spent inside its reply callback added to model_seconds."""
        assert isinstance(model, CallbackChatModel)
        inner: Reply = model.reply

        async def reply(speaker: str, messages: list[BaseMessage]) -> Any:
            start = time.perf_counter()
            try:
                return await inner(speaker, messages)
            finally:
                self.model_seconds += time.perf_counter() - start

        return CallbackChatModel(speaker=model.speaker, reply=reply)

    def take_counts(self) -> tuple[int, int]:
        """(persona calls, moderator calls) since the last take; the logged prompts are dropped."""
        moderator = self.count(MODERATOR)
        persona = len(self.calls) - moderator
        self.calls.clear()
        return persona, moderator


@dataclass(frozen=True)
class Mark:
    """A moment in a channel: wall clock, and the model time spent by then."""

    at: float
    model_seconds: float


@dataclass
class TimingPort:
    """Records when each post reaches the platform; everything else is kept only to spot failed rounds."""

    models: BenchModels
    posts: defaultdict[str, list[Mark]] = field(default_factory=lambda: defaultdict(list))
    notices: list[tuple[str, str]] = field(default_factory=list)

    def mark(self) -> Mark:
        return Mark(time.perf_counter(), self.models.model_seconds)

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        self.posts[channel_key].append(self.mark())

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        self.notices.append((channel_key, text))

    async def trace(self, channel_key: str, text: str) -> None:
        pass

    @asynccontextmanager
    async def answering(self, channel_key: str, event_id: str | None) -> AsyncIterator[None]:
        yield

    @asynccontextmanager
    async def typing(self, channel_key: str, persona: Persona) -> AsyncIterator[None]:
        yield

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        pass

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        raise AssertionError("the benchmark runs no tasks")

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        raise AssertionError("the benchmark asks for no actions")

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        raise AssertionError("the benchmark asks for no actions")

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        raise AssertionError("the benchmark asks for no actions")

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        raise AssertionError("the benchmark asks for no actions")

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        self.notices.append((channel_key, text))


@dataclass
class BenchApp:
    app: App
    models: BenchModels
    port: TimingPort

    async def say(self, channel_key: str, text: str) -> None:
        """Ana's line; she manages every channel, as the operator setting up a benchmark would, so her
        /dismiss and /moderate are allowed on every platform."""
        reply = await self.app.service.handle(Inbound(channel_key, "U0ANA", "Ana", text, author_manages=True))
        if reply is not None and not reply.ok:
            raise RuntimeError(f"{channel_key}: {text!r} was refused: {reply.reply}")

    async def round(self, channel_key: str, text: str) -> None:
        """One human line and the whole round it starts."""
        await self.say(channel_key, text)
        await self.app.service.wait_idle(channel_key)

    def check_answered(self, channel_keys: Sequence[str], posts_each: int) -> None:
        """Raise unless every channel got exactly `posts_each` posts: a failed round must not pass as fast."""
        wrong = [key for key in channel_keys if len(self.port.posts[key]) != posts_each]
        if wrong:
            notices = [text for key, text in self.port.notices if key == wrong[0]]
            raise RuntimeError(
                f"{len(wrong)} channels did not get {posts_each} posts, e.g. {wrong[0]}: "
                f"{len(self.port.posts[wrong[0]])} posts, notices {notices}"
            )


@asynccontextmanager
async def memory_persistence(config: Config) -> AsyncIterator[Persistence]:
    """History, checkpoints and timers each in an in-memory SQLite database: nothing reaches a file."""
    db = await open_database(":memory:")
    try:
        async with AsyncSqliteSaver.from_conn_string(":memory:") as checkpointer:
            yield Persistence(db, checkpointer, DurableTimers("sqlite://", db))
    finally:
        await db.close()


@asynccontextmanager
async def bench_app(
    models: BenchModels, sections: dict[str, dict[str, Any]] | None = None, *, in_memory: bool = False
) -> AsyncIterator[BenchApp]:
    """The real app (default SQLite WAL storage, or `in_memory`) in a temporary data directory, with
    the repo's personas."""
    with tempfile.TemporaryDirectory(prefix="roundtable-bench-") as directory:
        # The benchmark is one user flooding many channels on purpose: no flood limits here.
        unlimited = {"limits": {"user_messages_per_minute": 10_000, "channel_rounds_per_minute": 10_000}}
        config = load_config(write_config(Path(directory), {**unlimited, **(sections or {})}))
        port = TimingPort(models)
        persistence = memory_persistence if in_memory else open_persistence
        async with open_app(
            config, port, models=models, environ={}, rng=random.Random(7), persistence=persistence
        ) as app:
            yield BenchApp(app, models, port)


# The embedded models' GGUFs, assembled once and kept across bench runs (ROUNDTABLE_BENCH_MODELS: another cache).
MODELS_DIR = Path(os.environ.get("ROUNDTABLE_BENCH_MODELS", Path.home() / ".cache" / "roundtable-bench"))


def default_config(scratch: Path, personas: Path = ROOT / "personas", **overrides: str) -> Config:
    """The repository's config.toml as shipped (embedded model, default settings), with its data in
    `scratch`; `overrides` replace whole lines, such as {"session_gap_hours = 6": "..."}."""
    text = (ROOT / "config.toml").read_text(encoding="utf-8")
    text = text.replace('data_dir = "data"', f'data_dir = "{scratch / "data"}"')
    text = text.replace('personas_dir = "personas"', f'personas_dir = "{personas}"')
    for old, new in overrides.items():
        text = text.replace(old, new)
    path = scratch / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)
