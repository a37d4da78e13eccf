"""The openai provider through the real SDK path (langchain-openai on openai) against a fake server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai.chat_models.base import OpenAIRateLimitError

from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.models.retry import ainvoke_with_retry, is_transient
from personas import load_personas
from tests.fakes.openai_server import FakeOpenAI
from tests.provider_prompt import nova_prompt

API_KEY = "test-key-openai-0123456789"
MODEL = "gpt-4o-mini"
MODERATOR_MODEL = "gpt-4o-mini-moderator"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(reply_text="Friday works. Let's draft the post now!") as server:
        yield server


@pytest.fixture
def models(fake: FakeOpenAI) -> ChatModels:
    # A high rate limit keeps the limiter from pacing the retried requests.
    config = ProviderConfig(
        provider="openai",
        model=MODEL,
        moderator_model=MODERATOR_MODEL,
        base_url=f"{fake.url}/v1",
        requests_per_minute=60_000,
    )
    built = build_models(config, {"OPENAI_API_KEY": API_KEY})
    assert isinstance(built, ChatModels)
    return built


async def test_persona_prompt_reaches_the_wire_role_separated(fake: FakeOpenAI, models: ChatModels) -> None:
    nova = load_personas()["nova"]
    system, messages = nova_prompt()
    assert len(messages) == 5  # nothing trimmed by the budget

    reply = await ainvoke_with_retry(
        models.persona_model(nova, ["Sage", "Rex", "Pixel"]), messages, attempts=3, backoff_seconds=0.01
    )

    assert reply.text == "Friday works. Let's draft the post now!"
    [request] = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == MODEL
    assert request.body["messages"] == [
        {"role": "system", "content": system},
        {"role": "user", "content": "Ana: Can we ship the beta on Friday?"},
        {"role": "assistant", "content": "Picture the bigger version of this: a public launch!"},
        {"role": "user", "content": "[Sage] Let us read the test results first."},
        {"role": "user", "content": "[system] Rex joined the conversation."},
    ]
    assert "You are Nova" in system and nova.system_prompt.strip() in system
    assert "response_format" not in request.body


async def test_rate_limit_is_retried_by_tenacity_not_the_sdk(
    fake: FakeOpenAI, models: ChatModels, caplog: pytest.LogCaptureFixture
) -> None:
    nova = load_personas()["nova"]
    _, messages = nova_prompt()
    caplog.set_level(logging.DEBUG)

    fake.fail_next(2)
    reply = await ainvoke_with_retry(models.persona_model(nova, ["Sage"]), messages, attempts=3, backoff_seconds=0.01)

    assert reply.text == fake.reply_text
    assert len(fake.requests) == 3  # two 429s, then the success: one HTTP request per tenacity attempt
    # The openai SDK counts its own retries in this header; max_retries=0 keeps it at 0 on every request.
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "0", "0"]
    for request in fake.requests:
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"
        assert API_KEY not in request.query
    assert "429" in caplog.text
    assert API_KEY not in caplog.text


async def test_sdk_makes_a_single_request_per_attempt(fake: FakeOpenAI, models: ChatModels) -> None:
    nova = load_personas()["nova"]
    _, messages = nova_prompt()

    fake.fail_next(2)
    with pytest.raises(OpenAIRateLimitError) as raised:
        await ainvoke_with_retry(models.persona_model(nova, ["Sage"]), messages, attempts=1, backoff_seconds=0.01)

    assert len(fake.requests) == 1
    assert raised.value.status_code == 429
    assert is_transient(raised.value)


async def test_moderator_requests_json_schema_constrained_to_the_choices(fake: FakeOpenAI, models: ChatModels) -> None:
    fake.reply_text = '{"next_speaker": "Sage", "reason": "Sage has not spoken yet."}'
    _, messages = nova_prompt()

    reply = await ainvoke_with_retry(
        models.moderator_model(["Nova", "Sage", "FINISH"]), messages, attempts=3, backoff_seconds=0.01
    )

    assert reply.text == fake.reply_text
    [request] = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == MODERATOR_MODEL
    response_format = request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert schema["properties"]["next_speaker"]["enum"] == ["Nova", "Sage", "FINISH"]
    assert schema["required"] == ["next_speaker", "reason"]


async def test_a_prompt_past_a_llama_cpp_servers_context_is_sent_again_without_its_oldest_lines(
    fake: FakeOpenAI, models: ChatModels
) -> None:
    nova = load_personas()["nova"]
    system, messages = nova_prompt()
    older = [
        HumanMessage(content=f"Ana: Earlier thought {n} about the launch plan, the budget and the team.")
        for n in range(60)
    ]
    long_prompt = [messages[0], *older, *messages[1:]]  # the system message, 60 older lines, the recent four
    fake.context_tokens = 1200  # llama-server --ctx-size 1200

    reply = await ainvoke_with_retry(
        models.persona_model(nova, ["Sage", "Rex", "Pixel"]), long_prompt, attempts=3, backoff_seconds=0.01
    )

    assert reply.text == "Friday works. Let's draft the post now!"  # answered, not a failed turn
    first, second = (r.body["messages"] for r in fake.requests)
    assert len(first) == 1 + 60 + 4 and len(second) < len(first)
    assert second[0] == {"role": "system", "content": system}  # the persona stays who it is
    assert second[-4:] == first[-4:]  # the newest lines stay; the oldest went
    assert sum(len(m["content"]) for m in second) // 4 <= 1200
