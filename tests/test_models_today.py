"""Today's models on the wire: Gemini 3's thought signatures stored and replayed (after a restart
too), thinking levels, and OpenAI reasoning models' parameters. The real SDKs against the local fakes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from langchain_core.messages import HumanMessage

from graph.models.chat import ChatModels
from graph.models.factory import DEFAULT_MODEL, ProviderConfig, build_models
from graph.models.retry import ainvoke_with_retry
from personas import load_personas
from tests.fakes.gemini_server import SKIP_SENTINEL, FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.slack_harness import StartSlack

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

LAUNCH = {"name": "publish_post", "args": {"channel": "news", "text": "We launched!"}}


def gemini_models(fake: FakeGemini, **options: Any) -> ChatModels:
    config = ProviderConfig(provider="gemini", base_url=fake.url, requests_per_minute=60_000, **options)
    models = build_models(config, {"GOOGLE_API_KEY": "test-key-gemini"})
    assert isinstance(models, ChatModels)
    return models


async def close(models: ChatModels) -> None:
    for model in models.models.values():
        await model.aclose()  # type: ignore[attr-defined]


def model_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for content in body["contents"] if content["role"] == "model" for part in content["parts"]]


async def test_the_default_models_are_gemini_3() -> None:
    assert DEFAULT_MODEL.startswith("gemini-3")


async def test_the_fake_refuses_an_unsigned_call_like_gemini_3() -> None:
    """What langchain-google-genai's sentinel papers over: a replayed call without its signature is a 400."""
    contents = [
        {"role": "user", "parts": [{"text": "Ana: publish it"}]},
        {"role": "model", "parts": [{"functionCall": LAUNCH}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "publish_post", "response": {"output": "ok"}}}]},
    ]
    async with FakeGemini() as fake, aiohttp.ClientSession() as http:
        url = f"{fake.url}/v1beta/models/{DEFAULT_MODEL}:generateContent"
        async with http.post(url, json={"contents": contents}) as refused:
            assert refused.status == 400
            assert "missing a `thought_signature`" in (await refused.json())["error"]["message"]
        contents[1]["parts"][0]["thoughtSignature"] = SKIP_SENTINEL
        async with http.post(url, json={"contents": contents}) as accepted:
            assert accepted.status == 200
        assert fake.skipped_signatures == 1
        old = f"{fake.url}/v1beta/models/gemini-2.5-flash:generateContent"
        contents[1]["parts"][0].pop("thoughtSignature")
        async with http.post(old, json={"contents": contents}) as older_model:
            assert older_model.status == 200  # Gemini 2.5 did not insist


async def test_a_signed_call_is_replayed_with_its_signature_after_a_restart(start_slack: StartSlack) -> None:
    async with FakeGemini(reply_text="Happy to help with that.") as fake:
        models = gemini_models(fake)
        try:
            async with start_slack(models=models) as slack:
                fake.queue("Let me put that out for approval.", LAUNCH)
                await slack.say("Nova, publish 'We launched!' in #news", "1700000110.000100")
                [request] = slack.approval_requests()
        finally:
            await close(models)
        [signature] = fake.issued_signatures  # the fake signed the call part
        assert [p.get("thoughtSignature") for p in fake.requests[0].body["contents"][-1]["parts"]] == [None]

        models = gemini_models(fake)  # a new process: nothing of the first one's memory survives
        try:
            async with start_slack(models=models) as slack:
                fake.queue("It is live in #news now.")
                await slack.click("approval_approve", request)
                assert [p["text"] for p in slack.posts_to("news")] == ["We launched!"]
                assert slack.posts()[-1]["text"] == "It is live in #news now."
                fake.queue("Anything else?")
                await slack.say("Nova, thanks!", "1700000111.000100")
        finally:
            await close(models)

    follow_up, later = fake.requests[-2].body, fake.requests[-1].body
    for body in (follow_up, later):
        [call] = [p for p in model_parts(body) if "functionCall" in p]
        assert call["functionCall"] == LAUNCH
        assert call["thoughtSignature"] == signature  # the same bytes, unchanged
    # The follow-up's own reply was plain text, signed on its text part; the next request keeps it.
    signed_texts = [p for p in model_parts(later) if p.get("text") == "It is live in #news now."]
    assert [p.get("thoughtSignature") for p in signed_texts] == [fake.issued_signatures[1]]
    assert fake.skipped_signatures == 0
    assert all(SKIP_SENTINEL not in json.dumps(r.body) for r in fake.requests)


async def test_thinking_levels_go_as_gemini_thinking_level() -> None:
    async with FakeGemini() as fake:
        models = gemini_models(fake, thinking="low", moderator_thinking="minimal")
        try:
            nova = load_personas()["nova"]
            messages = [HumanMessage("Ana: hello")]
            await ainvoke_with_retry(models.persona_model(nova, []), messages, attempts=1, backoff_seconds=0)
            await ainvoke_with_retry(
                models.moderator_model(["Nova", "FINISH"]), messages, attempts=1, backoff_seconds=0
            )
        finally:
            await close(models)
    # google-genai writes this field in the proto's own name, which the API takes as well as camelCase.
    persona, moderator = (r.body["generationConfig"]["thinkingConfig"] for r in fake.requests)
    assert persona == {"thinking_level": "LOW"}
    assert moderator == {"thinking_level": "MINIMAL"}


async def openai_bodies(model: str, **options: Any) -> list[dict[str, Any]]:
    async with FakeOpenAI(reply_text="Sure, Friday works.") as fake:
        config = ProviderConfig(
            provider="openai", model=model, base_url=f"{fake.url}/v1", requests_per_minute=60_000, **options
        )
        models = build_models(config, {"OPENAI_API_KEY": "test-key-openai"})
        nova = load_personas()["nova"]
        reply = await ainvoke_with_retry(
            models.persona_model(nova, []), [HumanMessage("Ana: Friday?")], attempts=1, backoff_seconds=0
        )
        assert reply.text == "Sure, Friday works."
        return [r.body for r in fake.requests]


async def test_a_reasoning_model_gets_max_completion_tokens_and_the_reasoning_effort() -> None:
    [body] = await openai_bodies("gpt-5.5", thinking="high", max_output_tokens=2048)
    assert body["max_completion_tokens"] == 2048
    assert body["reasoning_effort"] == "high"
    assert "max_tokens" not in body and "temperature" not in body


async def test_ollama_and_vllm_keep_max_tokens_and_get_no_reasoning_effort_unless_asked() -> None:
    [body] = await openai_bodies("llama3.2", max_output_tokens=300)
    assert body["max_tokens"] == 300
    assert "max_completion_tokens" not in body and "reasoning_effort" not in body
    [plain] = await openai_bodies("llama3.2")
    assert not {"max_tokens", "max_completion_tokens", "reasoning_effort", "temperature"} & set(plain)


async def test_the_fake_refuses_max_tokens_for_a_reasoning_model_like_openai() -> None:
    async with FakeOpenAI() as fake, aiohttp.ClientSession() as http:
        body = {"model": "o4-mini", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10}
        async with http.post(f"{fake.url}/v1/chat/completions", json=body) as refused:
            assert refused.status == 400
            assert (await refused.json())["error"]["param"] == "max_tokens"
        body = {"model": "o4-mini", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2}
        async with http.post(f"{fake.url}/v1/chat/completions", json=body) as refused:
            assert refused.status == 400
            assert (await refused.json())["error"]["param"] == "temperature"
