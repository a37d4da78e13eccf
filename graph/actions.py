"""The actions a persona may call, and how a tool call is checked before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from personas import Persona


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PublishPost(_Args):
    channel: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=8000)


class SendMessage(_Args):
    to: str = Field(min_length=1, max_length=200, description="a user id or a channel")
    text: str = Field(min_length=1, max_length=8000)


class SchedulePost(_Args):
    at: datetime = Field(description="ISO 8601 date and time, with a timezone")
    channel: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=8000)


ACTIONS: dict[str, type[_Args]] = {
    "publish_post": PublishPost,
    "send_message": SendMessage,
    "schedule_post": SchedulePost,
}


@dataclass(frozen=True)
class ActionCall:
    """A checked tool call, ready for the policy and the port."""

    call_id: str
    name: str
    args: dict[str, Any]

    def describe(self) -> str:
        shown = ", ".join(f"{key}={_short(value)!r}" for key, value in self.args.items())
        return f"{self.name}({shown})"


def _short(value: Any, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_call(persona: Persona, call_id: str, name: str, args: Any) -> ActionCall | str:
    """The call, validated; or the tool error the persona gets back instead."""
    if name not in persona.actions:
        allowed = ", ".join(persona.actions) or "none"
        return f"error: {name} is not an action {persona.display_name} may use (allowed: {allowed})"
    spec = ACTIONS.get(name)
    if spec is None:
        return f"error: {name} is not a known action"
    try:
        parsed = spec.model_validate(args if isinstance(args, dict) else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        return f"error: bad arguments for {name}: {where}: {first['msg']}"
    return ActionCall(call_id=call_id, name=name, args=parsed.model_dump(mode="json"))
