"""The Slack side of a bot process: its Web API client, its outbound port and, once the app runs,
the listeners over HTTP or Socket Mode. Other platforms may share the process and the app."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.app import App
from bot.config import Config, ConfigError
from bot.slack.app import build_slack_app, make_web_client
from bot.slack.channel_names import channel_id_named, is_channel_id
from bot.slack.http_server import serving_http
from bot.slack.port import SlackPort, slack_port
from storage.database import Database

log = logging.getLogger(__name__)


def _env(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name) or None  # an empty variable counts as unset


class SlackAdapter:
    """Socket Mode when SLACK_APP_TOKEN is set, otherwise HTTP on [slack] host and port."""

    def __init__(self, config: Config, token: str, app_token: str | None, signing_secret: str | None) -> None:
        if app_token is None and signing_secret is None:
            raise ConfigError("Slack needs SLACK_SIGNING_SECRET (HTTP mode) or SLACK_APP_TOKEN (Socket Mode)")
        self.config = config
        self.token = token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.client = make_web_client(token, config.settings.slack.api_base_url)
        self.settings = config.settings.slack  # with channel names resolved to IDs, once started
        self._serving = False
        self._socket: AsyncSocketModeHandler | None = None

    @classmethod
    def from_environ(cls, config: Config, environ: Mapping[str, str]) -> SlackAdapter | None:
        """The adapter when SLACK_BOT_TOKEN is set, else None."""
        token = _env(environ, "SLACK_BOT_TOKEN")
        if token is None:
            return None
        return cls(config, token, _env(environ, "SLACK_APP_TOKEN"), _env(environ, "SLACK_SIGNING_SECRET"))

    def port(self, db: Database) -> SlackPort:
        return slack_port(self.config, self.client, db, approvals_channel=self.settings.approvals_channel)

    async def resolve_channel_names(self) -> None:
        """[slack] approvals_channel given by name ("#approvals") becomes the channel's ID before anything
        is posted: chat.postMessage takes a name, but conversations.history (the outbox's look-back), the
        keys of requests shown there and the check of where a typed decision was made need the ID. The
        adapter's `config` then holds the ID too, for the app opened on it. A name no channel has is a
        one-line error."""
        wanted = self.settings.approvals_channel
        if wanted and not is_channel_id(wanted):
            try:
                found = await channel_id_named(self.client, wanted.lstrip("#"))
            except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
                why = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
                raise ConfigError(
                    f"{self.config.path}: [slack] approvals_channel {wanted!r}: Slack's channel list could not be "
                    f"read ({why}); give the channel's ID (C…) instead"
                ) from None
            if found is None:
                raise ConfigError(
                    f"{self.config.path}: [slack] approvals_channel: no channel named {wanted!r} that the app can "
                    "see; invite the app there, or give the channel's ID (C…)"
                )
            log.info("Slack: approvals channel %s is %s", wanted, found)
            self.settings = self.settings.model_copy(update={"approvals_channel": found})
            self.config = replace(
                self.config, settings=self.config.settings.model_copy(update={"slack": self.settings})
            )

    @asynccontextmanager
    async def serving(self, app: App) -> AsyncIterator[None]:
        settings = self.settings
        bot = build_slack_app(app, settings, None if self.app_token else self.signing_secret, self.token, self.client)
        try:
            if self.app_token is not None:
                async with connected_socket_mode(bot.bolt, self.app_token) as self._socket:
                    log.info("Slack: connected in Socket Mode")
                    yield
            else:
                async with serving_http(bot.bolt, settings.host, settings.port) as url:
                    self._serving = True
                    log.info("Slack: serving events on %s/slack/events", url)
                    yield
        finally:
            self._serving, self._socket = False, None
            await bot.close()

    async def not_ready(self) -> str | None:
        """/readyz's Slack check: Socket Mode's websocket is open, or the HTTP server is serving."""
        if self._socket is not None:
            return None if await self._socket.client.is_connected() else "Socket Mode is not connected"
        return None if self._serving else "not connected yet"


# -- Socket Mode -------------------------------------------------------------------------------------
# Socket Mode: bolt's aiohttp AsyncSocketModeHandler, used when SLACK_APP_TOKEN is set.


@asynccontextmanager
async def connected_socket_mode(bolt: AsyncApp, app_token: str) -> AsyncIterator[AsyncSocketModeHandler]:
    """Connected (apps.connections.open, then the websocket) until the block ends.

    The handler reaches apps.connections.open through bolt's client, so it uses the configured base URL;
    it reconnects on its own when Slack drops the websocket.
    """
    handler = AsyncSocketModeHandler(bolt, app_token=app_token)
    try:
        await handler.connect_async()
        yield handler
    finally:
        await handler.close_async()
