"""The peer in the engine benchmark: AutoGen's SelectorGroupChat doing a Roundtable round's work.

Three AssistantAgents answer each human line, a model-driven selector picks the speaker before every
turn, and `MaxMessageTermination(1 + 3)` ends the round after the human line and three replies. The
team is never reset, but what it keeps is bounded like a Roundtable persona's window: each agent's
model context, the selector's and the group chat's message thread hold the newest `window` messages,
so neither its prompts nor its saved state grow with the run. Every model call goes to the shared
ModelDouble (bench/model_double.py). Optionally the team's state is saved after every round into an
SQLite file opened by Roundtable's own storage layer (storage/sqlite.py: WAL, synchronous=NORMAL,
statements on the loop, checkpoints in a worker thread), the settings Roundtable's lines are kept with.

Written against autogen-agentchat 0.7 (the bench extra: pip install -e '.[bench]').
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from typing import Any, Literal

from bench.model_double import ModelDouble
from storage.sqlite import SqliteDatabase

try:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.base import ChatAgent, Team, TerminationCondition
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, MessageFactory
    from autogen_agentchat.teams import SelectorGroupChat
    from autogen_agentchat.teams._group_chat._events import GroupChatTermination
    from autogen_agentchat.teams._group_chat._selector_group_chat import SelectorGroupChatManager
    from autogen_core import CancellationToken
    from autogen_core.model_context import BufferedChatCompletionContext
    from autogen_core.models import (
        ChatCompletionClient,
        CreateResult,
        LLMMessage,
        ModelCapabilities,
        ModelFamily,
        ModelInfo,
        RequestUsage,
    )
    from autogen_core.tools import Tool, ToolSchema
    from pydantic import BaseModel
except ImportError as error:  # pragma: no cover - a clear message instead of a bare traceback
    raise ImportError(f"{error}; the AutoGen peer needs the bench extra: pip install -e '.[bench]'") from error

PERSONAS = ("Nova", "Sage", "Rex")  # the names of the repo's three default participants
NO_ARGS: Mapping[str, Any] = {}
NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
SCHEMA = "CREATE TABLE IF NOT EXISTS team_state (team TEXT PRIMARY KEY, state TEXT NOT NULL, saved_at REAL NOT NULL)"


class DoubleClient(ChatCompletionClient):
    """The shared model double behind AutoGen's client interface: a persona's reply, or, when it
    plays the selector, the next name in `names` (round-robin)."""

    def __init__(self, double: ModelDouble, names: Sequence[str] = ()) -> None:
        self._double = double
        self._names = cycle(names) if names else None

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = NO_ARGS,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        content = self._double.pick(next(self._names)) if self._names else self._double.reply()
        return CreateResult(finish_reason="stop", content=content, usage=NO_USAGE, cached=False)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = NO_ARGS,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return NO_USAGE

    def total_usage(self) -> RequestUsage:
        return NO_USAGE

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelCapabilities:  # deprecated, still abstract
        return ModelCapabilities(vision=False, function_calling=False, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
        )


class WindowContext(BufferedChatCompletionContext):
    """AutoGen's buffered context keeps every message and only shows the newest `buffer_size`, so its
    saved state still grows; this one also forgets the older ones."""

    async def add_message(self, message: LLMMessage) -> None:
        await super().add_message(message)
        del self._messages[: -self._buffer_size]


class WindowedManager(SelectorGroupChatManager):
    """The selector's manager, keeping only the newest `window` messages of its thread (which it
    saves with the team's state)."""

    def __init__(self, *, window: int, **manager: Any) -> None:
        super().__init__(**manager)
        self._window = window

    async def update_message_thread(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> None:
        await super().update_message_thread(messages)
        del self._message_thread[: -self._window]


class WindowedSelectorGroupChat(SelectorGroupChat):
    """SelectorGroupChat whose manager is a WindowedManager: the one 0.7 builds, with a bounded thread."""

    def __init__(self, *args: Any, window: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._window = window

    def _create_group_chat_manager_factory(
        self,
        name: str,
        group_topic_type: str,
        output_topic_type: str,
        participant_topic_types: list[str],
        participant_names: list[str],
        participant_descriptions: list[str],
        output_message_queue: asyncio.Queue[BaseAgentEvent | BaseChatMessage | GroupChatTermination],
        termination_condition: TerminationCondition | None,
        max_turns: int | None,
        message_factory: MessageFactory,
    ) -> Callable[[], SelectorGroupChatManager]:
        return lambda: WindowedManager(
            name=name,
            group_topic_type=group_topic_type,
            output_topic_type=output_topic_type,
            participant_topic_types=participant_topic_types,
            participant_names=participant_names,
            participant_descriptions=participant_descriptions,
            output_message_queue=output_message_queue,
            termination_condition=termination_condition,
            max_turns=max_turns,
            message_factory=message_factory,
            model_client=self._model_client,
            selector_prompt=self._selector_prompt,
            allow_repeated_speaker=self._allow_repeated_speaker,
            selector_func=self._selector_func,
            max_selector_attempts=self._max_selector_attempts,
            candidate_func=self._candidate_func,
            emit_team_events=self._emit_team_events,
            model_context=self._model_context,
            model_client_streaming=self._model_client_streaming,
            window=self._window,
        )


@dataclass
class AutogenPeer:
    """One never-reset team; with `store`, its state is written to SQLite after every round."""

    team: Team
    double: ModelDouble
    store: SqliteDatabase | None = None

    async def round(self, text: str) -> float:
        """One human line answered by all three agents; seconds per agent turn, from the line until
        the round (and, if persisting, its saved state) is done."""
        calls, replies = self.double.calls, self.double.replies
        start = time.perf_counter()
        result = await self.team.run(task=text)
        if self.store is not None:
            await self.save()
        seconds = time.perf_counter() - start
        posted = [message for message in result.messages if message.source in PERSONAS]
        made = self.double.calls - calls, self.double.replies - replies
        if len(posted) != len(PERSONAS) or made != (2 * len(PERSONAS), len(PERSONAS)):
            raise RuntimeError(f"AutoGen round for {text!r}: {len(posted)} replies, (calls, replies) {made}")
        return seconds / len(PERSONAS)

    async def save(self) -> None:
        assert self.store is not None
        state = json.dumps(await self.team.save_state())
        async with self.store.transaction() as tx:
            await tx.execute(
                "INSERT INTO team_state (team, state, saved_at) VALUES ('bench', ?, ?) "
                "ON CONFLICT (team) DO UPDATE SET state = excluded.state, saved_at = excluded.saved_at",
                (state, time.time()),
            )


def build_team(double: ModelDouble, window: int) -> Team:
    """Three agents and a selector naming them round-robin, all on `double`; a round is the human
    line plus three replies; every history bounded at `window` messages."""
    agents: list[ChatAgent | Team] = [
        AssistantAgent(
            name,
            model_client=DoubleClient(double),
            description=f"{name}, one of the personas in the channel.",
            model_context=WindowContext(window),
        )
        for name in PERSONAS
    ]
    termination: TerminationCondition = MaxMessageTermination(1 + len(PERSONAS))
    return WindowedSelectorGroupChat(
        agents,
        model_client=DoubleClient(double, names=PERSONAS),
        termination_condition=termination,
        model_context=WindowContext(window),
        window=window,
    )


@asynccontextmanager
async def autogen_peer(double: ModelDouble, window: int, database: Path | None = None) -> AsyncIterator[AutogenPeer]:
    """A fresh team, in memory only, or saving its state into `database` after every round."""
    team = build_team(double, window)
    if database is None:
        yield AutogenPeer(team, double)
        return
    store = await SqliteDatabase.open(database)
    try:
        async with store.transaction() as tx:
            await tx.execute(SCHEMA)
        yield AutogenPeer(team, double, store)
    finally:
        await store.close()
