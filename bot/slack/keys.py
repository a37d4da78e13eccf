"""Roundtable channel keys for Slack: "slack:<team id>:<channel id>", and for a thread, a conversation
of its own, "slack:<team id>:<channel id>:<thread ts>"."""

from __future__ import annotations

PREFIX = "slack"


def channel_key(team_id: str, channel_id: str, thread_ts: str | None = None) -> str:
    key = f"{PREFIX}:{team_id}:{channel_id}"
    return f"{key}:{thread_ts}" if thread_ts else key


def _parts(key: str) -> list[str]:
    """[team, channel] or [team, channel, thread ts] of a Slack key; [] for another platform's key."""
    platform, _, rest = key.partition(":")
    return rest.split(":", 2) if platform == PREFIX else []


def channel_id_of(key: str) -> str | None:
    """The Slack channel id in a Slack channel or thread key; None for another platform's key."""
    parts = _parts(key)
    return (parts[1] or None) if len(parts) > 1 else None


def thread_ts_of(key: str) -> str | None:
    """The thread's ts in a Slack thread key; None for a channel's own key or another platform's."""
    parts = _parts(key)
    return (parts[2] or None) if len(parts) > 2 else None


def channel_key_of(key: str) -> str:
    """The key of the channel a Slack thread is in; any other key unchanged."""
    parts = _parts(key)
    return channel_key(parts[0], parts[1]) if len(parts) > 2 else key
