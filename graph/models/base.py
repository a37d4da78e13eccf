"""What the graph needs from a model provider: a model per persona, and ones for the
moderator, the planner and the coordinator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from personas import Persona

ChatRunnable = Runnable[LanguageModelInput, BaseMessage]


class UnparsableReply(ValueError):
    """A reply asked for as JSON that is not JSON: under constrained decoding, one cut off by its
    token limit (`finish_reason` "length"). The text goes back to whoever asked, who may ask again."""

    def __init__(self, text: str, finish_reason: str | None) -> None:
        super().__init__(f"the model's JSON reply was not complete ({finish_reason}): {text!r}")
        self.text = text
        self.finish_reason = finish_reason


class Models(Protocol):
    description: str

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        """The model that writes this persona's replies, with the persona's actions as tools.

        other_names feed stop strings where supported; `addressed` says the human line named the
        persona, which is when a model without native tool calls considers an action."""

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        """A model whose reply text is a JSON decision, constrained where supported to the choices:
        persona names, and FINISH when the round may end."""

    def planner_model(self, capabilities: Sequence[str], max_steps: int) -> ChatRunnable:
        """A model whose reply text is a task plan as JSON (graph/planner.py's schema, for steps
        needing these capabilities), constrained to it where supported."""

    def coordinator_model(self, schema: dict[str, Any]) -> ChatRunnable:
        """The moderator's (cheaper) model, answering JSON under schema: is a human line a task?"""

    def judge_model(self, schema: dict[str, Any]) -> ChatRunnable:
        """The review's judge ([review] judge_model, else the moderator's), answering a verdict as
        JSON under schema (graph/judge.py)."""

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        """The model that folds what left a persona's window into its summary ([memory] summary_model,
        else the moderator's), answering JSON under schema (graph/memory.py)."""
