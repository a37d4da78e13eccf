"""Slack Events API payloads as Slack sends them, and the signature headers that make them genuine."""

from __future__ import annotations

import time
from typing import Any

from slack_sdk.signature import SignatureVerifier

from tests.fakes.slack_api import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0GENERAL"
HUMAN = "UHUMAN"


def message(text: str, ts: str, **extra: Any) -> dict[str, Any]:
    """A human's channel message; `channel=` and `user=` in extra override the defaults."""
    return {
        "type": "message",
        "channel": CHANNEL,
        "user": HUMAN,
        "text": text,
        "ts": ts,
        "channel_type": "channel",
        **extra,
    }


def reaction(emoji: str, ts: str, *, removed: bool = False, **extra: Any) -> dict[str, Any]:
    """A person's reaction_added (or, `removed`, reaction_removed) on the message `ts` in #general, as
    https://docs.slack.dev/reference/events/reaction_added shows it: `user` reacted with `reaction`
    (the emoji's name, without colons) on `item` ({"type": "message", "channel", "ts"}) written by
    `item_user` (here the bot user, who posts as every persona); `channel=`, `user=`, `item_user=` override."""
    channel = extra.pop("channel", CHANNEL)
    return {
        "type": "reaction_removed" if removed else "reaction_added",
        "user": HUMAN,
        "reaction": emoji,
        "item_user": BOT_USER_ID,
        "item": {"type": "message", "channel": channel, "ts": ts},
        "event_ts": f"{time.time():.6f}",
        **extra,
    }


def envelope(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": {"event_ts": event.get("ts", "1"), **event},
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def signed_headers(
    body: str, content_type: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> dict[str, str]:
    stamp = str(timestamp if timestamp is not None else int(time.time()))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body),
    }


def buttons_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = message.get("blocks") or []
    return [element for block in blocks if block.get("type") == "actions" for element in block["elements"]]


def button_click(
    request: dict[str, Any], action_id: str, user: str, *, response_url: str, trigger: str
) -> dict[str, Any]:
    """The block_actions payload of `user` clicking button `action_id` on a posted approval request."""
    [button] = [b for b in buttons_of(request) if b["action_id"] == action_id]
    thread = request.get("thread_ts")
    in_thread = {"thread_ts": thread} if thread else {}
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": request["ts"],
            "channel_id": request["channel"],
            "is_ephemeral": False,
            **in_thread,
        },
        "trigger_id": trigger,
        "team": {"id": TEAM_ID, "domain": "fake"},
        "channel": {"id": request["channel"], "name": "general"},
        "message": {
            "type": "message",
            "ts": request["ts"],
            "text": request["text"],
            "bot_id": BOT_ID,
            "blocks": request["blocks"],
            **in_thread,
        },
        "response_url": response_url,
        "actions": [{**button, "block_id": "approval", "action_ts": str(time.time())}],
    }
