"""Token usage on the wire (the fake Gemini's usage metadata through the real SDK): stored per
channel, persona and role, reported by /usage, and the daily budget on a fake clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from bot.inbound import Inbound
from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.observe import ModelCall, working_in
from personas import load_personas
from storage import history, usage
from tests.conftest import EMBEDDED_SEED, EMBEDDED_THREADS
from tests.fakes.gemini_server import THOUGHT_TOKENS, FakeGemini
from tests.recording_port import RecordingPort

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

KEY = "console:budget"


class FakeClock:
    def __init__(self, at: datetime) -> None:
        self.now = at.timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def gemini() -> AsyncIterator[tuple[FakeGemini, ChatModels]]:
    async with FakeGemini(reply_text="Happy to help, tell me more about it.") as fake:
        config = ProviderConfig(provider="gemini", base_url=fake.url, requests_per_minute=60_000)
        models = build_models(config, {"GOOGLE_API_KEY": "test-key-gemini"})
        assert isinstance(models, ChatModels)
        yield fake, models
        for model in models.models.values():
            await model.aclose()  # type: ignore[attr-defined]


async def say(app: Any, text: str, author: str = "ana") -> None:
    await app.service.handle(Inbound(KEY, author, author.title(), text))
    await app.service.wait_idle(KEY)


async def test_a_channel_stops_at_its_daily_budget_tells_once_keeps_lines_and_resumes_the_next_day(
    open_test_app: Any, port: RecordingPort, gemini: tuple[FakeGemini, ChatModels]
) -> None:
    fake, models = gemini
    clock = FakeClock(datetime(2026, 11, 25, 22, 0, tzinfo=UTC))
    sections = {"limits": {"channel_tokens_per_day": 30}, "approvals": {"approvers": {"console": ["boss"]}}}
    async with open_test_app(sections, models=models, clock=clock) as app:
        await say(app, "Sage, what do you think?")
        assert port.speakers(KEY) == ["sage"]
        await app.service.tokens.flush()  # counted in memory, written once a second: now
        spent = await usage.channel_tokens(app.db, KEY, "2026-11-25")
        assert spent >= 30  # one Gemini call: 12 prompt, the reply, and THOUGHT_TOKENS thinking
        calls = len(fake.requests)

        clock.now += 3600  # 23:00 UTC, same day
        await say(app, "Sage, and now?")
        await say(app, "Sage, hello?")
        assert len(fake.requests) == calls  # no model call, no round
        assert port.speakers(KEY) == ["sage"]
        notices = [n for n in port.notices() if "model tokens for today" in n]
        assert len(notices) == 1 and "30 model tokens" in notices[0]
        assert [e for e in port.events if e[0] == "approvers" and "model tokens for today" in e[2]]
        lines = [line.text for line in await history.recent_channel_lines(app.db, KEY, limit=20)]
        assert "Sage, and now?" in lines and "Sage, hello?" in lines  # human lines still stored

        clock.now += 3600 + 5  # 00:00:05 UTC the next day
        fake.queue("Good morning! Where were we?")  # not a copy of yesterday's line, which review would refuse
        await say(app, "Sage, good morning!")
        assert port.speakers(KEY) == ["sage", "sage"]
        assert len(fake.requests) == calls + 1


async def test_usage_is_stored_per_persona_and_role_and_reported(
    open_test_app: Any, gemini: tuple[FakeGemini, ChatModels]
) -> None:
    fake, models = gemini
    clock = FakeClock(datetime(2026, 11, 25, 12, 0, tzinfo=UTC))
    decision = {"next_speaker": "Sage", "reason": "Sage was asked."}
    async with open_test_app({"moderation": {"enabled": True, "max_turns": 1}}, models=models, clock=clock) as app:
        fake.queue(json.dumps(decision))
        fake.queue("I think we should test it first.")
        await say(app, "What do you all think?")  # addressed to no one: the moderator picks
        await app.service.tokens.flush()
        totals = await usage.usage_since(app.db, KEY, "2026-11-25")
        clock.now += 86400 * 3  # three days later, the report counts it in the 30 days, not today
        report = await app.service.tokens.report(KEY, app.personas)

    by_role = {(t.persona_id, t.role): t for t in totals}
    assert ("sage", "persona") in by_role and ("", "moderator") in by_role
    sage = by_role[("sage", "persona")]
    assert sage.calls == 1 and sage.input_tokens == 12 and sage.thinking_tokens == THOUGHT_TOKENS
    assert sage.output_tokens == len("I think we should test it first.") // 4
    assert "- Sage: 0 today" in report and "the moderator: 0 today" in report
    assert f"{sage.total:,} in 30 days (1 call; {THOUGHT_TOKENS} thinking)" in report


async def test_the_embedded_model_counts_its_own_tokens() -> None:
    """Gemma through the same ChatModels wiring: its own prompt and reply token counts reach the watcher."""
    config = ProviderConfig(
        provider="local",
        local_model="gemma-3-270m",
        local_cache_dir=Path.home() / ".cache" / "roundtable-test",
        local_max_tokens=16,
        local_threads=EMBEDDED_THREADS,
        local_seed=EMBEDDED_SEED,  # it must write something to count: the same way every run
    )
    models = build_models(config, {})
    assert isinstance(models, ChatModels)
    calls: list[ModelCall] = []

    async def record(call: ModelCall) -> None:
        calls.append(call)

    models.watch(record)
    nova = load_personas()["nova"]
    working_in.set("console:gemma")
    messages = [SystemMessage("A group chat."), HumanMessage("Ana: where should we go this summer?")]
    await models.persona_model(nova, ["Sage", "Ana"]).ainvoke(messages)
    [call] = calls
    assert (call.channel_key, call.persona_id, call.role, call.provider) == (
        "console:gemma",
        "nova",
        "persona",
        "local",
    )
    assert call.input_tokens > 10 and call.output_tokens > 0 and call.thinking_tokens == 0
