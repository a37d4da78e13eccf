"""The gemini provider through the real SDK path (langchain-google-genai on google-genai) against a fake server."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import pytest
from langchain_google_genai.chat_models import GoogleRateLimitError

from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.models.retry import ainvoke_with_retry, is_transient
from personas import load_personas
from tests.fakes.gemini_server import FakeGemini
from tests.provider_prompt import nova_prompt

API_KEY = "test-key-gemini-0123456789"

# google-genai subclasses aiohttp.ClientSession, which aiohttp flags; that is the SDK's business, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")


@pytest.fixture
async def fake() -> AsyncIterator[FakeGemini]:
    async with FakeGemini(reply_text="Friday works. Let's draft the post now!") as server:
        yield server


@pytest.fixture
async def models(fake: FakeGemini) -> AsyncIterator[ChatModels]:
    # A high rate limit keeps the limiter from pacing the retried requests.
    config = ProviderConfig(provider="gemini", base_url=fake.url, requests_per_minute=60_000)
    built = build_models(config, {"GOOGLE_API_KEY": API_KEY})
    assert isinstance(built, ChatModels)
    yield built
    for model in built.models.values():
        await model.aclose()  # type: ignore[attr-defined]  # closes google-genai's aiohttp session


async def test_persona_prompt_reaches_the_wire_role_separated(fake: FakeGemini, models: ChatModels) -> None:
    nova = load_personas()["nova"]
    system, messages = nova_prompt()
    assert len(messages) == 5  # nothing trimmed by the budget

    reply = await ainvoke_with_retry(
        models.persona_model(nova, ["Sage", "Rex", "Pixel"]), messages, attempts=3, backoff_seconds=0.01
    )

    assert reply.text == "Friday works. Let's draft the post now!"
    [request] = fake.requests
    assert request.path.partition("/models/")[2] == "gemini-3.8-flash:generateContent"  # on v1 or v1beta
    instruction = "".join(part["text"] for part in request.body["systemInstruction"]["parts"])
    assert instruction == system
    assert "You are Nova" in instruction
    assert nova.system_prompt.strip() in instruction
    turns = [(content["role"], [part["text"] for part in content["parts"]]) for content in request.body["contents"]]
    assert turns == [
        ("user", ["Ana: Can we ship the beta on Friday?"]),
        ("model", ["Picture the bigger version of this: a public launch!"]),
        ("user", ["[Sage] Let us read the test results first."]),
        ("user", ["[system] Rex joined the conversation."]),
    ]


async def test_rate_limit_is_retried_by_tenacity_not_the_sdk(
    fake: FakeGemini, models: ChatModels, caplog: pytest.LogCaptureFixture
) -> None:
    nova = load_personas()["nova"]
    _, messages = nova_prompt()
    model = models.persona_model(nova, ["Sage"])
    caplog.set_level(logging.DEBUG)

    fake.fail_next(2)
    reply = await ainvoke_with_retry(model, messages, attempts=3, backoff_seconds=0.01)

    assert reply.text == fake.reply_text
    assert len(fake.requests) == 3  # two 429s, then the success: one HTTP request per tenacity attempt
    assert [r.body for r in fake.requests] == [fake.requests[0].body] * 3
    # The key travels only in the x-goog-api-key header: not in the URL, the body or any log line.
    for request in fake.requests:
        assert request.headers["x-goog-api-key"] == API_KEY
        assert API_KEY not in request.query
        assert API_KEY not in json.dumps(request.body)
    assert "429" in caplog.text
    assert API_KEY not in caplog.text


async def test_one_rate_limit_is_logged_with_its_status_and_tried_again(
    fake: FakeGemini, models: ChatModels, caplog: pytest.LogCaptureFixture
) -> None:
    _, messages = nova_prompt()
    caplog.set_level(logging.WARNING)

    fake.fail_next(1)
    reply = await ainvoke_with_retry(
        models.persona_model(load_personas()["nova"], ["Sage"]), messages, attempts=2, backoff_seconds=0.01
    )

    assert reply.text == fake.reply_text
    assert len(fake.requests) == 2
    assert "429" in caplog.text and "trying again" in caplog.text
    assert API_KEY not in caplog.text


async def test_sdk_makes_a_single_request_per_attempt(fake: FakeGemini, models: ChatModels) -> None:
    """max_retries=1 means no google-genai retries: with one tenacity attempt a 429 surfaces at once."""
    nova = load_personas()["nova"]
    _, messages = nova_prompt()

    fake.fail_next(2)
    with pytest.raises(GoogleRateLimitError) as raised:
        await ainvoke_with_retry(models.persona_model(nova, ["Sage"]), messages, attempts=1, backoff_seconds=0.01)

    assert len(fake.requests) == 1
    # langchain's GoogleRateLimitError has no status itself; is_transient finds the ClientError(429) it wraps.
    assert getattr(raised.value.__cause__, "code", None) == 429
    assert is_transient(raised.value)


async def test_dropped_connection_is_retried(fake: FakeGemini, models: ChatModels) -> None:
    """google-genai's async path uses aiohttp, whose connection errors reach us unwrapped."""
    nova = load_personas()["nova"]
    _, messages = nova_prompt()

    fake.drop_next(1)
    reply = await ainvoke_with_retry(models.persona_model(nova, ["Sage"]), messages, attempts=3, backoff_seconds=0.01)

    assert reply.text == fake.reply_text
    assert len(fake.requests) == 2


async def test_moderator_requests_json_constrained_to_the_choices(fake: FakeGemini, models: ChatModels) -> None:
    fake.reply_text = '{"next_speaker": "Sage", "reason": "Sage has not spoken yet."}'
    _, messages = nova_prompt()

    reply = await ainvoke_with_retry(
        models.moderator_model(["Nova", "Sage", "FINISH"]), messages, attempts=3, backoff_seconds=0.01
    )

    assert json.loads(reply.text)["next_speaker"] == "Sage"
    [request] = fake.requests
    assert request.path.partition("/models/")[2] == "gemini-3.5-flash-lite:generateContent"
    config = request.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["properties"]["next_speaker"]["enum"] == ["Nova", "Sage", "FINISH"]
    assert schema["required"] == ["next_speaker", "reason"]
