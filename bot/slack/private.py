"""Answers only one person sees: chat.postEphemeral, logged (never raised) when Slack refuses."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.text import escape_for_slack

log = logging.getLogger(__name__)


async def tell_privately(client: AsyncWebClient, channel: str, user: str, text: str, thread: str | None = None) -> None:
    """`text` is plain: it is escaped here."""
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=escape_for_slack(text), thread_ts=thread)
    except SlackClientError as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
        log.warning("chat.postEphemeral in %s failed: %s", channel, error)
