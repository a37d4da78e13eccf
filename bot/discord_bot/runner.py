"""The Discord side of a bot process (DiscordAdapter), and `discord_bot`: Discord alone, as the tests run it."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass

import discord

from bot.app import App, open_app
from bot.config import Config, ConfigError
from bot.discord_bot.approval_message import PLATFORM, ApprovalBoard
from bot.discord_bot.approvals import ApprovalClicks
from bot.discord_bot.client import RoundtableClient
from bot.discord_bot.endpoints import discord_endpoints
from bot.discord_bot.port import DiscordPort
from bot.request_places import RequestPlaces
from graph.models.base import Models
from graph.port import OutboundPort
from storage.database import Database

TOKEN_ENV = "DISCORD_TOKEN"

log = logging.getLogger(__name__)


@dataclass
class DiscordBot:
    app: App
    client: RoundtableClient
    connection: asyncio.Task[None]  # login, sync, then the gateway loop; ends when the client closes


def discord_token(environ: Mapping[str, str]) -> str | None:
    return environ.get(TOKEN_ENV) or None


class DiscordAdapter:
    """The Discord side of a bot process: a client, its outbound port (built once storage is open)
    and, once the app runs, the connection. Other platforms may share the process and the app."""

    def __init__(self, config: Config, token: str, *, approvals_elsewhere: OutboundPort | None = None) -> None:
        self.config = config
        self.token = token
        settings = config.settings.discord
        self.client = RoundtableClient(
            manager_role=settings.manager_role,
            shard_count=settings.shard_count,
            shard_ids=settings.shard_ids,
            gateway_pinned=bool(settings.gateway_url),
        )
        self.approvals_elsewhere = approvals_elsewhere
        self.board: ApprovalBoard | None = None

    async def not_ready(self) -> str | None:
        """/readyz's Discord check: logged in, and every shard this process holds connected to the
        gateway (discord.py keeps a shard's last websocket, closed, while it reconnects)."""
        shards = self.client.shards.values()
        connected = bool(shards) and not any(shard.is_closed() for shard in shards)
        ready = self.client.is_ready() and not self.client.is_closed() and connected
        return None if ready else "not connected to the gateway"

    def port(self, db: Database) -> DiscordPort:
        self.board = ApprovalBoard(self.client, RequestPlaces(PLATFORM, db))
        return DiscordPort(
            self.client,
            self.board,
            approvals_elsewhere=self.approvals_elsewhere,
            twemoji_base_url=self.config.settings.discord.twemoji_base_url,
            approvers_for=self.config.settings.approvals.approvers_for,
        )

    @asynccontextmanager
    async def connected(self, app: App) -> AsyncIterator[asyncio.Task[None]]:
        """Serve the app's service over the gateway; on exit, running rounds finish, then all closes."""
        assert self.board is not None, "open_app builds the port first"
        self.client.serve(app.service, app.personas, ApprovalClicks(app.service, self.board))
        async with self.client:
            connection = asyncio.create_task(self.client.start(self.token), name="discord")
            try:
                yield connection
            finally:
                grace = self.config.settings.bot.shutdown_grace_seconds
                await app.service.drain(grace)
                await app.outbox.settled(grace)  # what is due goes out while the client can still post
                await self.client.close()
                if not connection.done():
                    connection.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await connection


@contextmanager
def discord_errors_as_config_errors() -> Iterator[None]:
    try:
        yield
    except discord.LoginFailure:
        raise ConfigError(f"Discord refused the bot token in {TOKEN_ENV}") from None
    except discord.PrivilegedIntentsRequired:
        raise ConfigError(
            "Discord refused the Message Content intent: switch it on under Bot > Privileged Gateway Intents "
            "in the Developer Portal"
        ) from None


@asynccontextmanager
async def discord_bot(
    config: Config,
    environ: Mapping[str, str],
    *,
    models: Models | None = None,
    rng: random.Random | None = None,
    approvals_elsewhere: OutboundPort | None = None,
) -> AsyncIterator[DiscordBot]:
    """The app and a connected (connecting) client, Discord alone in the process.

    With `approvals_elsewhere` (the Slack port, when [approvals] surface = "slack"), approval
    requests are shown there, and the Discord channel is told."""
    token = discord_token(environ)
    if token is None:
        raise ConfigError(f"Discord needs the {TOKEN_ENV} environment variable (the bot token)")
    settings = config.settings.discord
    with discord_endpoints(settings.api_base_url, settings.gateway_url):
        adapter = DiscordAdapter(config, token, approvals_elsewhere=approvals_elsewhere)
        async with open_app(config, adapter.port, models=models, environ=environ, rng=rng) as app:
            async with adapter.connected(app) as connection:
                yield DiscordBot(app=app, client=adapter.client, connection=connection)
