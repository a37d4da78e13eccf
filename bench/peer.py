"""The peer in the engine benchmark: AutoGen's SelectorGroupChat doing a Roundtable round's work.

Three AssistantAgents answer each human line, a model-driven selector picks the speaker before every
turn, and `MaxMessageTermination(1 + 3)` ends the round after the human line and three replies. The
team is never reset, so its history grows like a channel's. A zero-latency client plays both the
personas' model and the selector's. Optionally the team's state is saved to SQLite (aiosqlite, WAL,
synchronous=NORMAL, as Roundtable's storage) after every round.

Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import aiosqlite

try:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.base import ChatAgent, Team
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import SelectorGroupChat
    from autogen_core import CancellationToken
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
REPLY = "A perfectly reasonable reply, long enough to pass review."  # what bench.harness's fake model says
NO_ARGS: Mapping[str, Any] = MappingProxyType({})
NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
SCHEMA = "CREATE TABLE IF NOT EXISTS team_state (team TEXT PRIMARY KEY, state TEXT NOT NULL, saved_at REAL NOT NULL)"


class ZeroLatencyClient(ChatCompletionClient):
    """Answers at once: with the next name in `names` (round-robin) when it plays the selector, else
    with `reply`."""

    def __init__(self, reply: str = REPLY, names: Sequence[str] = ()) -> None:
        self._reply = reply
        self._names = cycle(names) if names else None
        self.calls = 0

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
        self.calls += 1
        content = next(self._names) if self._names else self._reply
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


@dataclass
class AutogenPeer:
    """One never-reset team; with `store`, its state is written to SQLite after every round."""

    team: SelectorGroupChat
    personas: ZeroLatencyClient
    selector: ZeroLatencyClient
    store: aiosqlite.Connection | None = None

    async def round(self, text: str) -> float:
        """One human line answered by all three agents; seconds per agent turn, from the line until
        the round (and, if persisting, its saved state) is done."""
        calls = self.personas.calls, self.selector.calls
        start = time.perf_counter()
        result = await self.team.run(task=text)
        if self.store is not None:
            await self.save()
        seconds = time.perf_counter() - start
        replies = [message for message in result.messages if message.source in PERSONAS]
        made = self.personas.calls - calls[0], self.selector.calls - calls[1]
        if len(replies) != len(PERSONAS) or made != (len(PERSONAS), len(PERSONAS)):
            raise RuntimeError(f"AutoGen round for {text!r}: {len(replies)} replies, (persona, selector) calls {made}")
        return seconds / len(PERSONAS)

    async def save(self) -> None:
        assert self.store is not None
        state = json.dumps(await self.team.save_state())
        await self.store.execute(
            "INSERT INTO team_state (team, state, saved_at) VALUES ('bench', ?, ?) "
            "ON CONFLICT (team) DO UPDATE SET state = excluded.state, saved_at = excluded.saved_at",
            (state, time.time()),
        )
        await self.store.commit()


def build_team() -> tuple[SelectorGroupChat, ZeroLatencyClient, ZeroLatencyClient]:
    """Three agents on one zero-latency client and a selector that names them round-robin; a round is
    the human line plus three replies."""
    personas, selector = ZeroLatencyClient(), ZeroLatencyClient(names=PERSONAS)
    agents: list[ChatAgent | Team] = [
        AssistantAgent(name, model_client=personas, description=f"{name}, one of the personas in the channel.")
        for name in PERSONAS
    ]
    team = SelectorGroupChat(agents, model_client=selector, termination_condition=MaxMessageTermination(1 + 3))
    return team, personas, selector


@asynccontextmanager
async def autogen_peer(database: Path | None = None) -> AsyncIterator[AutogenPeer]:
    """A fresh team, in memory only, or saving its state into `database` after every round."""
    team, personas, selector = build_team()
    if database is None:
        yield AutogenPeer(team, personas, selector)
        return
    async with aiosqlite.connect(database) as store:
        await store.execute("PRAGMA journal_mode = WAL")
        await store.execute("PRAGMA synchronous = NORMAL")
        await store.execute(SCHEMA)
        await store.commit()
        yield AutogenPeer(team, personas, selector, store)
