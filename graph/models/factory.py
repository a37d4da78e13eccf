"""The one place a provider name becomes models: gemini, openai-compatible, local llama.cpp or scripted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.rate_limiters import InMemoryRateLimiter
from pydantic import SecretStr

from graph.mcp import ToolCatalog
from graph.models.base import ChatRunnable, Models
from graph.models.chat import ChatModels
from graph.models.gguf import DEFAULT_LOCAL_MODEL, WeightsError, ensure_gguf, local_model
from graph.models.scripted import ScriptedModels
from personas import Persona

PROVIDERS = ("auto", "local", "gemini", "openai", "scripted")
STRONGER_MODEL = (
    "For better replies, set GOOGLE_API_KEY (Gemini) or OPENAI_API_KEY or [llm] base_url "
    "(an OpenAI-compatible server such as Ollama) and start again."
)
THINKING_LEVELS = ("minimal", "low", "medium", "high")
DEFAULT_MODEL = "gemini-3.8-flash"  # GA since 2 September 2026, no shutdown announced
DEFAULT_MODERATOR_MODEL = "gemini-3.5-flash-lite"  # GA since 21 July 2026, thinks minimally by default
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5(?!.*-chat)|gpt-[6-9])")


class ProviderError(ValueError):
    """The provider cannot be set up (a missing key, say). The message is one line."""


@dataclass(frozen=True)
class ProviderConfig:
    provider: str = "auto"
    model: str = DEFAULT_MODEL
    moderator_model: str = DEFAULT_MODERATOR_MODEL
    thinking: str = ""  # one of THINKING_LEVELS, or "" for the model's own default
    moderator_thinking: str = ""
    max_output_tokens: int = 0  # 0: the model's own limit
    judge_model: str = ""  # "" is the moderator's model
    summary_model: str = ""  # "" is the moderator's model
    requests_per_minute: float = 60
    model_requests_per_minute: Mapping[str, float] = field(default_factory=dict)
    base_url: str = ""
    timeout_seconds: float = 60
    local_model: str = DEFAULT_LOCAL_MODEL
    local_threads: int = 2
    local_context_size: int = 2048
    local_max_tokens: int = 96
    local_cache_dir: Path = Path.home() / ".cache" / "roundtable"
    local_seed: int | None = None  # None: every embedded call samples a random seed

    def rpm_for(self, model: str) -> float:
        return self.model_requests_per_minute.get(model, self.requests_per_minute)

    def thinking_for(self, model: str) -> str:
        """The configured thinking level for a model name: the moderator's for its model."""
        if model == self.moderator_model and model != self.model:
            return self.moderator_thinking
        return self.thinking


def is_reasoning_model(name: str) -> bool:
    """OpenAI's reasoning models (o-series, gpt-5 and later except the -chat ones) refuse `max_tokens`
    and any temperature but the default; they take `max_completion_tokens` and a reasoning effort."""
    return bool(_REASONING_MODEL.match(name.lower().rsplit("/", 1)[-1]))


def resolve_provider(config: ProviderConfig, environ: Mapping[str, str]) -> str:
    """`auto` means Gemini with a Google key, an OpenAI-compatible endpoint when one is configured,
    and otherwise the embedded local model. The scripted double is only ever chosen explicitly."""
    if config.provider != "auto":
        return config.provider
    if environ.get("GOOGLE_API_KEY"):
        return "gemini"
    if environ.get("OPENAI_API_KEY") or config.base_url:
        return "openai"
    return "local"


def build_models(config: ProviderConfig, environ: Mapping[str, str]) -> Models:
    provider = resolve_provider(config, environ)
    if provider == "scripted":
        return ScriptedModels()
    if provider == "gemini":
        return _gemini(config, environ)
    if provider == "openai":
        return _openai(config, environ)
    if provider == "local":
        return _local(config)
    raise ProviderError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")


def _gemini(config: ProviderConfig, environ: Mapping[str, str]) -> Models:
    from langchain_google_genai import ChatGoogleGenerativeAI

    key = environ.get("GOOGLE_API_KEY")
    if not key:
        raise ProviderError("provider 'gemini' needs the GOOGLE_API_KEY environment variable")

    def make(name: str, limiter: InMemoryRateLimiter | None) -> BaseChatModel:
        # Gemini 3 takes a thinking level; empty leaves the model on its own default.
        thinking = config.thinking_for(name)
        return ChatGoogleGenerativeAI(
            model=name,
            google_api_key=key,
            base_url=config.base_url or None,
            rate_limiter=limiter,
            max_retries=1,  # tenacity does the retrying (graph/models/retry.py)
            timeout=config.timeout_seconds,
            max_output_tokens=config.max_output_tokens or None,
            **({"thinking_level": thinking} if thinking else {}),
        )

    def bind_moderator(model: BaseChatModel, schema: dict[str, Any]) -> ChatRunnable:
        return model.bind(response_mime_type="application/json", response_json_schema=schema)

    return ChatModels(
        description=f"Gemini ({config.model}; moderator {config.moderator_model})",
        make=make,
        persona_model_name=config.model,
        moderator_model_name=config.moderator_model,
        judge_model_name=config.judge_model,
        summary_model_name=config.summary_model,
        requests_per_minute=config.rpm_for,
        bind_moderator=bind_moderator,
        provider="gemini",
    )


def _openai_response_format(schema: dict[str, Any], name: str = "moderator_decision") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _openai(config: ProviderConfig, environ: Mapping[str, str]) -> Models:
    from langchain_openai import ChatOpenAI

    key = environ.get("OPENAI_API_KEY")
    if not key and not config.base_url:
        raise ProviderError("provider 'openai' needs OPENAI_API_KEY or [llm] base_url (e.g. an Ollama endpoint)")

    def make(name: str, limiter: InMemoryRateLimiter | None) -> BaseChatModel:
        thinking = config.thinking_for(name)
        limit = config.max_output_tokens or None
        if is_reasoning_model(name):
            # langchain-openai sends max_tokens as max_completion_tokens and no temperature unless set.
            options: dict[str, Any] = {"max_tokens": limit, "reasoning_effort": thinking or None}
        else:
            # Ollama and vLLM keep the classic max_tokens field, outside langchain-openai's renaming.
            options = {"extra_body": {"max_tokens": limit} if limit else None}
            if thinking:
                options["reasoning_effort"] = thinking
        return ChatOpenAI(
            model=name,
            api_key=SecretStr(key or "unused"),  # local OpenAI-compatible servers such as Ollama ignore the key
            base_url=config.base_url or None,
            rate_limiter=limiter,
            max_retries=0,
            timeout=config.timeout_seconds,
            **options,
        )

    def bind_moderator(model: BaseChatModel, schema: dict[str, Any]) -> ChatRunnable:
        return model.bind(response_format=_openai_response_format(schema))

    def bind_json(model: BaseChatModel, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        return model.bind(response_format=_openai_response_format(schema, "json_reply"))

    return ChatModels(
        description=f"OpenAI-compatible ({config.model} at {config.base_url or 'api.openai.com'})",
        make=make,
        persona_model_name=config.model,
        moderator_model_name=config.moderator_model,
        judge_model_name=config.judge_model,
        summary_model_name=config.summary_model,
        requests_per_minute=config.rpm_for,
        bind_moderator=bind_moderator,
        bind_json=bind_json,
        provider="openai",
    )


def _local(config: ProviderConfig) -> Models:
    from graph.models.local import LocalLlamaChatModel
    from graph.moderator import fixed_reason_schema
    from graph.planner import embedded_plan_schema

    try:
        weights = local_model(config.local_model)
        model_path = ensure_gguf(config.local_cache_dir, weights.key)
    except WeightsError as exc:
        raise ProviderError(str(exc)) from None
    shared = LocalLlamaChatModel(
        model_path=str(model_path),
        n_threads=config.local_threads,
        n_ctx=config.local_context_size,
        max_tokens=config.local_max_tokens,
        chat_template=weights.chat_template,
        seed=config.local_seed,
    )
    shared.load()  # loading holds the GIL for about a second: do it now, not inside the first round

    def make(name: str, limiter: InMemoryRateLimiter | None) -> BaseChatModel:
        return shared  # one embedded model serves personas and moderator alike

    def bind_persona(
        model: BaseChatModel, persona: Persona, other_names: Sequence[str], addressed: bool, tools: ToolCatalog | None
    ) -> ChatRunnable:
        # Stopping at other names is the impersonation guard (a base model continues the transcript).
        # Without native tool calls, the model considers an action only when the human line addressed it:
        # its built-in actions, and its MCP tools as (name the model uses, tool) pairs.
        stops = ["\n", *(f"{name}:" for name in other_names)]
        actions = list(persona.actions) if addressed else []
        offered = (
            [(tools.exposed_name(t), t) for t in tools.allowed(persona)] if tools is not None and addressed else []
        )
        # Read-only by our config ([mcp.servers.X] read_only), never by the server's own hints.
        reading = [exposed for exposed, t in offered if tools is not None and tools.is_read_only(t.qualified)]
        return model.bind(
            speaker=persona.display_name, stop=stops, actions=actions, mcp_tools=offered, read_only_tools=reading
        )

    def bind_moderator(model: BaseChatModel, schema: dict[str, Any]) -> ChatRunnable:
        # A small model's free text is seldom a reason anyone can read: it picks one from a fixed set.
        return model.bind(response_format=_openai_response_format(fixed_reason_schema(schema)))

    def bind_json(model: BaseChatModel, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        # Constrained decoding under the caller's schema; a plan needs more tokens than a decision. At
        # temperature 0, as the action step: the likeliest reading (a summary sampled at 0.8 kept no stated fact).
        return model.bind(
            response_format=_openai_response_format(schema, "json_reply"), max_tokens=max_tokens, temperature=0.0
        )

    return ChatModels(
        description=f"embedded {weights.title} via llama.cpp ({model_path.name})",
        make=make,
        persona_model_name=weights.key,
        moderator_model_name=weights.key,
        requests_per_minute=None,
        bind_moderator=bind_moderator,
        bind_persona=bind_persona,
        bind_json=bind_json,
        plan_schema=embedded_plan_schema,
        advice=STRONGER_MODEL,
        provider="local",
    )
