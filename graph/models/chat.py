"""Models backed by LangChain chat models: one instance and one rate limiter per model name."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.rate_limiters import InMemoryRateLimiter
from langchain_core.runnables import Runnable, RunnableConfig

from graph.actions import CONFIDENCE, confidence_schema, tool_definitions
from graph.mcp import ToolCatalog
from graph.models.base import ChatRunnable
from graph.moderator import decision_schema
from graph.observe import ModelCallWatcher, RecordCall
from graph.planner import plan_schema
from graph.template_text import with_written_calls
from personas import Persona

MakeChatModel = Callable[[str, InMemoryRateLimiter | None], BaseChatModel]
BindPersona = Callable[[BaseChatModel, Persona, Sequence[str], bool, ToolCatalog | None], ChatRunnable]
BindModerator = Callable[[BaseChatModel, dict[str, Any]], ChatRunnable]
BindJson = Callable[[BaseChatModel, dict[str, Any], int], ChatRunnable]
"""A model bound to answer JSON under a schema, in at most that many tokens where a budget matters."""
PlanSchema = Callable[[Sequence[str], int], dict[str, Any]]

PLAN_MAX_TOKENS = 1024  # a whole plan from the embedded model: up to 8 steps of ~100 tokens
COORDINATOR_MAX_TOKENS = 16
# A verdict and one short reason; the embedded model caps the reason at 100 characters, which can
# take 60 tokens or more.
JUDGE_MAX_TOKENS = 160


def rate_limiter(requests_per_minute: float) -> InMemoryRateLimiter:
    limiter = InMemoryRateLimiter(
        requests_per_second=requests_per_minute / 60,
        check_every_n_seconds=0.05,
        max_bucket_size=max(1.0, requests_per_minute / 60),
    )
    # The limiter starts empty, which would delay the very first request; start it full instead.
    limiter.available_tokens = limiter.max_bucket_size
    return limiter


def bind_actions_as_tools(
    model: BaseChatModel, persona: Persona, other_names: Sequence[str], addressed: bool, tools: ToolCatalog | None
) -> ChatRunnable:
    """Models with native tool calls (Gemini, OpenAI-compatible) get exactly the persona's actions,
    and the MCP tools its file allows, with the servers' own names, descriptions and input schemas."""
    definitions = tool_definitions(persona.actions)
    if tools is not None:
        definitions += tools.definitions(persona, {CONFIDENCE: confidence_schema()})
    if not definitions:
        return model
    return model.bind_tools(definitions)


class ReadsWrittenCalls(Runnable[LanguageModelInput, BaseMessage]):
    """A persona's model whose tool calls written as text (a small model behind llama.cpp or Ollama,
    graph/template_text.py) come back as the real tool calls they are: checked, and run or held for
    approval, like the calls the provider returned itself. The one place this is done, for every
    provider; the reply's other words are reviewed as usual."""

    def __init__(self, model: ChatRunnable) -> None:
        self.model = model

    def invoke(self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any) -> BaseMessage:
        return with_written_calls(self.model.invoke(input, config, **kwargs))

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> BaseMessage:
        return with_written_calls(await self.model.ainvoke(input, config, **kwargs))


class ChatModels:
    def __init__(
        self,
        *,
        description: str,
        make: MakeChatModel,
        persona_model_name: str,
        moderator_model_name: str,
        judge_model_name: str = "",
        summary_model_name: str = "",
        requests_per_minute: Callable[[str], float] | None,
        bind_moderator: BindModerator,
        bind_persona: BindPersona = bind_actions_as_tools,
        bind_json: BindJson | None = None,
        plan_schema: PlanSchema = plan_schema,
        advice: str = "",
        provider: str = "",
    ) -> None:
        self.description = description
        self.advice = advice  # one sentence for the person starting the bot, such as how to get a stronger model
        self.provider = provider
        self._watcher: ModelCallWatcher | None = None
        self._make = make
        self._persona_model_name = persona_model_name
        self._moderator_model_name = moderator_model_name
        self._judge_model_name = judge_model_name or moderator_model_name
        self._summary_model_name = summary_model_name or moderator_model_name
        self._rpm = requests_per_minute
        self._bind_moderator = bind_moderator
        self._bind_persona = bind_persona
        self._bind_json: BindJson = bind_json or (lambda model, schema, max_tokens: bind_moderator(model, schema))
        self._plan_schema = plan_schema
        self._models: dict[str, BaseChatModel] = {}
        self.tools: ToolCatalog | None = None

    def use_tools(self, tools: ToolCatalog) -> None:
        """The MCP tools to offer personas, beside their built-in actions."""
        self.tools = tools

    def _model(self, name: str) -> BaseChatModel:
        if name not in self._models:
            limiter = rate_limiter(self._rpm(name)) if self._rpm else None
            self._models[name] = self._make(name, limiter)
        return self._models[name]

    @property
    def models(self) -> Mapping[str, BaseChatModel]:
        return self._models

    def watch(self, record: RecordCall | None) -> None:
        """Time and count every later model call, and hand each to `record` (graph/observe.py)."""
        self._watcher = ModelCallWatcher(self.provider or "unknown", record)

    def _watched(self, runnable: ChatRunnable, name: str, role: str, persona_id: str = "") -> ChatRunnable:
        if self._watcher is None:
            return runnable
        return self._watcher.watched(runnable, name, role, persona_id)

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        name = persona.model or self._persona_model_name
        model = self._bind_persona(self._model(name), persona, other_names, addressed, self.tools)
        return self._watched(ReadsWrittenCalls(model), name, "persona", persona.id)

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        name = self._moderator_model_name
        return self._watched(self._bind_moderator(self._model(name), decision_schema(choices)), name, "moderator")

    def planner_model(self, capabilities: Sequence[str], max_steps: int) -> ChatRunnable:
        name, schema = self._persona_model_name, self._plan_schema(capabilities, max_steps)
        return self._watched(self._bind_json(self._model(name), schema, PLAN_MAX_TOKENS), name, "planner")

    def coordinator_model(self, schema: dict[str, Any]) -> ChatRunnable:
        name = self._moderator_model_name  # the moderator's model, deciding what a line is
        return self._watched(self._bind_json(self._model(name), schema, COORDINATOR_MAX_TOKENS), name, "moderator")

    def judge_model(self, schema: dict[str, Any]) -> ChatRunnable:
        name = self._judge_model_name
        return self._watched(self._bind_json(self._model(name), schema, JUDGE_MAX_TOKENS), name, "judge")

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        name = self._summary_model_name
        return self._watched(self._bind_json(self._model(name), schema, max_tokens + 64), name, "summary")
