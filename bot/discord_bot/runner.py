"""`run_discord`: the Discord bot, wired to the app, until the connection ends."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import discord

from bot.app import App, open_app
from bot.config import Config, ConfigError
from bot.discord_bot.approval_board import ApprovalBoard
from bot.discord_bot.approval_clicks import ApprovalDesk
from bot.discord_bot.approval_places import FILE_NAME, ApprovalPlaces
from bot.discord_bot.client import RoundtableClient
from bot.discord_bot.endpoints import discord_endpoints
from bot.discord_bot.port import DiscordPort, ForwardApproval
from graph.models.base import Models

TOKEN_ENV = "DISCORD_TOKEN"

log = logging.getLogger(__name__)


@dataclass
class DiscordBot:
    app: App
    client: RoundtableClient
    connection: asyncio.Task[None]  # login, sync, then the gateway loop; ends when the client closes


async def run_discord(
    config: Config, environ: Mapping[str, str], *, forward_approval: ForwardApproval | None = None
) -> None:
    """Run the Discord bot until its connection ends. Setup mistakes become one-line ConfigErrors.

    `forward_approval` is the Slack bot's, when one runs in this process; see discord_bot."""
    try:
        async with discord_bot(config, environ, forward_approval=forward_approval) as bot:
            await bot.connection
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
    forward_approval: ForwardApproval | None = None,
) -> AsyncIterator[DiscordBot]:
    """The app and a connected (connecting) client; on exit, running rounds finish, then all closes.

    With [approvals] surface = "slack", approval requests go to `forward_approval` (the Slack bot's);
    without one, they are asked in Discord after all."""
    token = environ.get(TOKEN_ENV)
    if not token:
        raise ConfigError(f"Discord needs the {TOKEN_ENV} environment variable (the bot token)")
    settings = config.settings.discord
    forward = _forward_for(config, forward_approval)
    with discord_endpoints(settings.api_base_url, settings.gateway_url):
        client = RoundtableClient(manager_role=settings.manager_role)
        async with ApprovalPlaces.open(config.data_dir / FILE_NAME) as places:
            board = ApprovalBoard(client, places)
            port = DiscordPort(client, board, forward_approval=forward)
            async with open_app(config, port, models=models, environ=environ, rng=rng) as app, client:
                client.serve(app.service, app.personas, ApprovalDesk(app.service, board))
                connection = asyncio.create_task(client.start(token), name="discord")
                try:
                    yield DiscordBot(app=app, client=client, connection=connection)
                finally:
                    await app.service.drain(config.settings.bot.shutdown_grace_seconds)
                    await client.close()
                    if not connection.done():
                        connection.cancel()
                    with suppress(asyncio.CancelledError, Exception):
                        await connection


def _forward_for(config: Config, forward_approval: ForwardApproval | None) -> ForwardApproval | None:
    if config.settings.approvals.surface != "slack":
        return None
    if forward_approval is None:
        log.warning('[approvals] surface is "slack" but no Slack bot runs here; Discord approvals are asked in Discord')
    return forward_approval
