"""Slack event payloads reduced to Inbound. Pure: no I/O, no Slack client."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.inbound import Inbound
from bot.slack.keys import channel_key
from bot.slack.text import unescape_from_slack

# Plain messages, replies also sent to the channel, and messages with an attached file.
HUMAN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
EVENT_TYPES = frozenset({"message", "app_mention"})
# Slack: the message event's channel_type, docs.slack.dev/reference/events/message: "channel" is a
# public channel; "group" a private one, "im" and "mpim" direct messages (only their members read them).
PUBLIC_CHANNEL_TYPES = frozenset({"channel"})
PRIVATE_CHANNEL_TYPES = frozenset({"group", "im", "mpim"})


def message_id(team_id: str, channel: str, ts: str) -> str:
    """The dedupe key for one Slack message.

    Retries of an event keep its envelope event_id, but a channel message that mentions the bot
    arrives twice with different event_ids (a `message` and an `app_mention`); both share the
    message's channel and ts, so that is the identity that catches retries and twins alike.
    """
    return f"slack:{team_id}:{channel}:{ts}"


def message_of(event_id: str | None) -> tuple[str, str] | None:
    """(channel, ts) of a message_id; None for anything else."""
    platform, _, rest = (event_id or "").partition(":")
    parts = rest.split(":")
    return (parts[1], parts[2]) if platform == "slack" and len(parts) == 3 and all(parts) else None


def strip_mention(text: str, user_id: str | None) -> str:
    if not user_id:
        return text.strip()
    without = re.sub(rf"<@{re.escape(user_id)}(\|[^>]*)?>", " ", text)
    return re.sub(r"[ \t]{2,}", " ", without).strip()


def inbound_from_event(body: Mapping[str, Any], bot_user_id: str | None) -> Inbound | None:
    """The human message in an Events API envelope, or None when it is not one we answer.

    author_name is the Slack user id here; the caller swaps in the display name it looks up.
    A message in a thread gets the thread's own channel key (and `thread`, where its answers go).
    """
    event = body.get("event")
    if not isinstance(event, Mapping) or _text(event.get("type")) not in EVENT_TYPES:
        return None
    subtype = event.get("subtype")
    if event.get("bot_id") or event.get("hidden") or not (subtype is None or _text(subtype) in HUMAN_SUBTYPES):
        return None
    user, channel, ts, thread = (_text(event.get(name)) for name in ("user", "channel", "ts", "thread_ts"))
    team_id = _text(body.get("team_id")) or _text(event.get("team"))
    if not (user and channel and ts and team_id) or user == bot_user_id:
        return None
    text = strip_mention(unescape_from_slack(_text(event.get("text"))), bot_user_id)
    if not text:
        return None
    thread = thread if thread != ts else ""  # a thread's parent is a top-level message
    return Inbound(
        channel_key=channel_key(team_id, channel, thread),  # a thread is a conversation of its own
        author_id=user,
        author_name=user,
        text=text,
        event_id=message_id(team_id, channel, ts),
        thread=thread or None,
        # A user from another organisation (Slack Connect) is marked with their own workspace.
        author_team=_text(event.get("user_team")) or _text(event.get("team")) or team_id,
        tenant=f"slack:{team_id}",
        parent_key=channel_key(team_id, channel) if thread else None,  # a thread keeps its channel's rules
        private=is_private(event),
    )


def is_private(event: Mapping[str, Any]) -> bool | None:
    """Whether only the channel's members read it, from the event's channel_type; None when absent
    (an app_mention carries none): what was recorded before stays."""
    kind = _text(event.get("channel_type"))
    if kind in PUBLIC_CHANNEL_TYPES:
        return False
    return True if kind in PRIVATE_CHANNEL_TYPES else None


def _text(value: Any) -> str:
    """A field Slack sends as a string; anything else counts as missing."""
    return value if isinstance(value, str) else ""
