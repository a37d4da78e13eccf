"""Roundtable channel keys for Slack: "slack:<team id>:<channel id>"."""

from __future__ import annotations

PREFIX = "slack"


def channel_key(team_id: str, channel_id: str) -> str:
    return f"{PREFIX}:{team_id}:{channel_id}"


def channel_id_of(key: str) -> str | None:
    """The Slack channel id in a Slack channel key; None for another platform's key."""
    platform, _, rest = key.partition(":")
    _, _, channel = rest.partition(":")
    return (channel or None) if platform == PREFIX else None
