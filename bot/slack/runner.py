"""run_slack: the Roundtable app on Slack, over HTTP or Socket Mode, until cancelled."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from bot.app import open_app
from bot.config import Config, ConfigError
from bot.slack.app import build_slack_app
from bot.slack.client import make_web_client
from bot.slack.http_server import serving_http
from bot.slack.port import slack_port
from bot.slack.socket_mode import connected_socket_mode

log = logging.getLogger(__name__)


def _env(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None  # empty counts as unset, as in bot.config.secret


async def run_slack(config: Config, environ: Mapping[str, str]) -> None:
    """Socket Mode when SLACK_APP_TOKEN is set, otherwise HTTP on [slack] host and port."""
    settings = config.settings.slack
    token = _env(environ, "SLACK_BOT_TOKEN")
    app_token = _env(environ, "SLACK_APP_TOKEN")
    signing_secret = _env(environ, "SLACK_SIGNING_SECRET")
    if token is None:
        raise ConfigError("SLACK_BOT_TOKEN is not set")
    if app_token is None and signing_secret is None:
        raise ConfigError("Slack needs SLACK_SIGNING_SECRET (HTTP mode) or SLACK_APP_TOKEN (Socket Mode)")

    client = make_web_client(token, settings.api_base_url)
    port = slack_port(config, client)
    async with open_app(config, port, environ=environ) as roundtable:
        port.messages.attach(roundtable.db)
        bot = build_slack_app(roundtable, settings, None if app_token else signing_secret, token, client)
        try:
            if app_token is not None:
                async with connected_socket_mode(bot.bolt, app_token):
                    log.info("Slack: connected in Socket Mode")
                    await asyncio.Event().wait()
            else:
                async with serving_http(bot.bolt, settings.host, settings.port) as url:
                    log.info("Slack: serving events on %s/slack/events", url)
                    await asyncio.Event().wait()
        finally:
            await bot.close()
