"""build_slack_app: the bolt AsyncApp with every Slack listener attached to the Roundtable app."""

from __future__ import annotations

from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import App
from bot.config import SlackSection
from bot.slack import approvals, commands, events
from bot.slack.client import make_web_client
from bot.slack.http_server import SignedBolt
from bot.slack.slack_bot import SlackBot
from bot.slack.users import UserNames


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
    bot = SlackBot(bolt=bolt, roundtable=roundtable, settings=settings, names=UserNames(client))
    events.register(bot)
    commands.register(bot)
    approvals.register(bot)
    return bot
