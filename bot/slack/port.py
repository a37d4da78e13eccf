"""SlackPort: the outbound port, posting through chat.postMessage under each persona's name and icon."""

from __future__ import annotations

import logging
import re
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.keys import channel_id_of
from bot.slack.text import slack_messages
from personas import Persona

log = logging.getLogger(__name__)

NOTICE_NAME = "Roundtable"
_EMOJI_CODE = re.compile(r"^:[a-z0-9_+'-]+:$")

_DELIVERY_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError)


def persona_identity(persona: Persona) -> dict[str, str]:
    """username plus icon_url or icon_emoji; a raw unicode emoji has no Slack icon field, so only the name."""
    identity = {"username": persona.display_name}
    if persona.avatar_is_url:
        identity["icon_url"] = persona.avatar
    elif _EMOJI_CODE.match(persona.avatar):
        identity["icon_emoji"] = persona.avatar
    return identity


class SlackPort:
    """Delivery failures (not_in_channel, ratelimited after retries, invalid_auth) are logged, never raised:
    the line is already stored, and a failed post must not fail the round or the service."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        await self._send(channel_key, text, thread, persona_identity(persona))

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        await self._send(channel_key, text, thread, {"username": NOTICE_NAME})

    async def trace(self, channel_key: str, text: str) -> None:
        log.debug("trace %s: %s", channel_key, text)

    async def _send(self, channel_key: str, text: str, thread: str | None, identity: dict[str, str]) -> None:
        channel = channel_id_of(channel_key)
        if channel is None:
            log.warning("not a Slack channel key, message dropped: %s", channel_key)
            return
        for piece in slack_messages(text):
            arguments: dict[str, Any] = {"channel": channel, "text": piece, "unfurl_links": False, **identity}
            if thread:
                arguments["thread_ts"] = thread
            try:
                await self.client.chat_postMessage(**arguments)
            except _DELIVERY_ERRORS as exc:
                log.warning("chat.postMessage in %s failed: %s", channel_key, _describe(exc))
                return  # the rest of a split message would read as a fragment


def _describe(exc: BaseException) -> str:
    """The Slack error code or exception type; never request details, which could carry credentials."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "unknown_error"))
    return type(exc).__name__
