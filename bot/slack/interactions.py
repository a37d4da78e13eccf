"""Interactivity payloads (button clicks, modal submissions) reduced to what the handlers need.

Pure: no I/O. A payload that lacks something needed gives None, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.numbers import record_id
from bot.slack.approval_blocks import FEEDBACK_BLOCK, FEEDBACK_INPUT


@dataclass(frozen=True)
class ButtonClick:
    approval_id: int
    user_id: str
    channel: str | None  # where the clicked message is, for a private answer
    thread: str | None
    trigger_id: str | None  # for views.open, valid for 3 seconds
    team_id: str | None = None  # the clicker's workspace
    workspace: str | None = None  # the workspace the click came from (the app's)


@dataclass(frozen=True)
class FeedbackSubmission:
    approval_id: int
    user_id: str
    comment: str
    team_id: str | None = None
    workspace: str | None = None


def button_click(body: Mapping[str, Any]) -> ButtonClick | None:
    actions = body.get("actions")
    action = actions[0] if isinstance(actions, list) and actions else None
    approval_id = _approval_id(action.get("value") if isinstance(action, Mapping) else None)
    user_id = _user_id(body)
    if approval_id is None or user_id is None:
        return None
    container = _mapping(body.get("container"))
    channel = _mapping(body.get("channel")).get("id") or container.get("channel_id")
    thread = container.get("thread_ts") or _mapping(body.get("message")).get("thread_ts")
    trigger_id = body.get("trigger_id")
    return ButtonClick(
        approval_id=approval_id,
        user_id=user_id,
        team_id=_team_id(body),
        workspace=_workspace(body),
        channel=str(channel) if channel else None,
        thread=str(thread) if thread else None,
        trigger_id=str(trigger_id) if trigger_id else None,
    )


def feedback_submission(body: Mapping[str, Any]) -> FeedbackSubmission | None:
    view = _mapping(body.get("view"))
    approval_id = _approval_id(view.get("private_metadata"))
    user_id = _user_id(body)
    values = _mapping(_mapping(view.get("state")).get("values"))
    comment = _mapping(_mapping(values.get(FEEDBACK_BLOCK)).get(FEEDBACK_INPUT)).get("value")
    if approval_id is None or user_id is None:
        return None
    return FeedbackSubmission(approval_id, user_id, str(comment or "").strip(), _team_id(body), _workspace(body))


def _approval_id(value: Any) -> int | None:
    return record_id(str(value).strip()) if isinstance(value, (str, int)) else None


def _user_id(body: Mapping[str, Any]) -> str | None:
    user_id = _mapping(body.get("user")).get("id")
    return str(user_id) if user_id else None


def _workspace(body: Mapping[str, Any]) -> str | None:
    team_id = _mapping(body.get("team")).get("id")
    return str(team_id) if team_id else None


def _team_id(body: Mapping[str, Any]) -> str | None:
    """The user's own workspace, else the one the payload came from."""
    team_id = _mapping(body.get("user")).get("team_id") or _mapping(body.get("team")).get("id")
    return str(team_id) if team_id else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
