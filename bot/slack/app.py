"""build_slack_app: the bolt AsyncApp with every Slack listener attached to the Roundtable app."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler, async_default_handlers
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import App
from bot.settings import SlackSection
from bot.slack import approvals, commands, events, reactions
from bot.slack.http_server import SignedBolt
from bot.slack.slack_bot import SlackBot, UserNames

log = logging.getLogger(__name__)


def build_slack_app(
    roundtable: App,
    settings: SlackSection,
    signing_secret: str | None,
    token: str,
    client: AsyncWebClient | None = None,
) -> SlackBot:
    """signing_secret None turns request verification off, which only Socket Mode may do.

    `client` (already holding `token`) is shared with the SlackPort; without one, a client is made.
    """
    client = client or make_web_client(token, settings.api_base_url)
    bolt = SignedBolt(
        signature_verifier=SignatureVerifier(signing_secret) if signing_secret is not None else None,
        client=client,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        # Listeners only ack and hand the work to SlackBot.work, so running them before the
        # response costs nothing, and once a request is answered its work is there to await.
        process_before_response=True,
    )
    bolt.error(on_error)
    bot = SlackBot(bolt=bolt, roundtable=roundtable, settings=settings, names=UserNames(client, settings.managers))
    events.register(bot)
    commands.register(bot)
    approvals.register(bot)
    reactions.register(bot)
    return bot


async def on_error(error: Exception) -> BoltResponse | None:
    """A signed request bolt itself cannot read (it lacks a field Slack always sends) gets 400 and
    one log line; a failure in our own listeners keeps bolt's 500 and its traceback."""
    if _raised_in_bolt(error):
        log.warning("Slack request refused (400): bolt cannot read it (%s: %s)", type(error).__name__, error)
        return BoltResponse(status=400, body="")
    log.error("a Slack listener failed", exc_info=error)
    return None


def _raised_in_bolt(error: Exception) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and "slack_bolt" in Path(frames[-1].filename).parts


# -- the Web API client ------------------------------------------------------------------------------
# The one Slack Web API client: the bot token, the configured base URL and the library's retry handlers.

RATE_LIMIT_RETRIES = 3


def make_web_client(token: str, api_base_url: str) -> AsyncWebClient:
    """A client that retries connection errors and, honoring Retry-After, `ratelimited` answers."""
    return AsyncWebClient(
        token=token,
        base_url=api_base_url if api_base_url.endswith("/") else api_base_url + "/",
        retry_handlers=[*async_default_handlers(), AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)],
    )
