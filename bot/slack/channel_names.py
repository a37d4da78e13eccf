"""Slack channels by name: what a config or an action names "#news", Slack's methods want as an ID."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient


def is_channel_id(name: str) -> bool:
    """A Slack conversation ID (C…, G…, D…, upper case); channel names are lower case."""
    return name[:1] in ("C", "G", "D") and name.isalnum() and name == name.upper()


async def channel_id_named(client: AsyncWebClient, name: str) -> str | None:
    """The ID of the unarchived public or private channel called `name` that the app can see, read page by
    page with conversations.list (https://docs.slack.dev/reference/methods/conversations.list)."""
    cursor = ""
    while True:
        page = await client.conversations_list(
            types="public_channel,private_channel", exclude_archived=True, limit=200, cursor=cursor or None
        )
        for channel in page.get("channels") or []:
            if channel.get("name") == name:
                return str(channel["id"])
        cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return None
