"""The one Slack Web API client: the bot token, the configured base URL and the library's retry handlers."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler, async_default_handlers
from slack_sdk.web.async_client import AsyncWebClient

RATE_LIMIT_RETRIES = 3


def make_web_client(token: str, api_base_url: str) -> AsyncWebClient:
    """A client that retries connection errors and, honoring Retry-After, `ratelimited` answers."""
    return AsyncWebClient(
        token=token,
        base_url=api_base_url if api_base_url.endswith("/") else api_base_url + "/",
        retry_handlers=[*async_default_handlers(), AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)],
    )
