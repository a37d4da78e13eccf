"""A chat provider's fake server with the real SDK's models built on it: Gemini through
langchain-google-genai's base_url, OpenAI-compatible through langchain-openai's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI

ProviderName = Literal["gemini", "openai"]
PROVIDERS: tuple[ProviderName, ...] = ("gemini", "openai")


@asynccontextmanager
async def fake_provider(name: str, reply_text: str) -> AsyncIterator[tuple[FakeGemini | FakeOpenAI, ChatModels]]:
    """The fake server answering `reply_text` unless told otherwise, and the models that call it."""
    if name == "gemini":
        async with FakeGemini(reply_text=reply_text) as gemini:
            config = ProviderConfig(provider="gemini", base_url=gemini.url, requests_per_minute=60_000)
            models = build_models(config, {"GOOGLE_API_KEY": "test-key-gemini"})
            assert isinstance(models, ChatModels)
            try:
                yield gemini, models
            finally:
                for model in models.models.values():
                    await model.aclose()  # type: ignore[attr-defined]
    else:
        async with FakeOpenAI(reply_text=reply_text) as openai:
            config = ProviderConfig(provider="openai", base_url=f"{openai.url}/v1", requests_per_minute=60_000)
            models = build_models(config, {"OPENAI_API_KEY": "test-key-openai"})
            assert isinstance(models, ChatModels)
            yield openai, models


@dataclass
class Provider:
    name: str
    server: FakeGemini | FakeOpenAI
    models: ChatModels

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.server.requests]

    def schema_sent(self, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON schema the request asks the reply to follow, as each provider's wire carries it."""
        if self.name == "gemini":
            config = body["generationConfig"]
            assert config["responseMimeType"] == "application/json"
            return config["responseJsonSchema"]
        response_format = body["response_format"]
        assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
        return response_format["json_schema"]["schema"]

    def texts(self, body: dict[str, Any]) -> list[str]:
        if self.name == "gemini":
            return [part["text"] for content in body["contents"] for part in content["parts"] if "text" in part]
        return [str(message["content"]) for message in body["messages"] if message["role"] != "system"]
