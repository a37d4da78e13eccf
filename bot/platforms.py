"""`python -m bot run`: every platform whose tokens are set, in one process around one app.

Storage opens first; then each platform's port is built on it, behind one port that routes by the
channel key's platform; then the platforms start taking events. With [approvals] surface = "slack",
approval requests from Discord channels are shown on Slack buttons.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack

from bot.app import open_app
from bot.config import Config, ConfigError
from bot.discord_bot.endpoints import discord_endpoints
from bot.discord_bot.runner import DiscordAdapter, discord_errors_as_config_errors, discord_token
from bot.ops import serving_ops
from bot.port import PlatformPorts
from bot.slack.runner import SlackAdapter
from graph.port import OutboundPort
from storage.database import Database

log = logging.getLogger(__name__)


async def run_platforms(config: Config, environ: Mapping[str, str]) -> bool:
    """Serve Slack and/or Discord until stopped (or Discord's connection ends). False, at once,
    when no platform token is set."""
    slack = SlackAdapter.from_environ(config, environ)
    token = discord_token(environ)
    if slack is None and token is None:
        return False
    surface_on_slack = config.settings.approvals.surface == "slack" and slack is not None and token is not None
    if surface_on_slack and not config.settings.slack.approvals_channel:
        raise ConfigError(f'{config.path}: [approvals] surface = "slack" needs [slack] approvals_channel')
    if slack is not None:
        await slack.resolve_channel_names()
        config = slack.config  # [slack] approvals_channel as the channel's ID, for every check of the app
    async with AsyncExitStack() as stack:
        discord = None
        if token is not None:
            stack.enter_context(
                discord_endpoints(config.settings.discord.api_base_url, config.settings.discord.gateway_url)
            )
            discord = DiscordAdapter(config, token)

        def ports(db: Database) -> PlatformPorts:
            by_platform: dict[str, OutboundPort] = {}
            slack_port = slack.port(db) if slack is not None else None
            if slack_port is not None:
                by_platform["slack"] = slack_port
            if discord is not None:
                discord.approvals_elsewhere = slack_port if surface_on_slack else None
                by_platform["discord"] = discord.port(db)
            return PlatformPorts(by_platform)

        app = await stack.enter_async_context(open_app(config, ports, environ=environ))
        if slack is not None:
            app.readiness.add("slack", slack.not_ready)
        if discord is not None:
            app.readiness.add("discord", discord.not_ready)
        ops = config.settings.ops  # up before the platforms connect: /readyz says 503 until they have
        await stack.enter_async_context(serving_ops(app.db, app.readiness, ops.host, ops.port))
        if slack is not None:
            await stack.enter_async_context(slack.serving(app))
        if discord is None:
            await asyncio.Event().wait()  # until a stop signal cancels this
            return True
        with discord_errors_as_config_errors():
            connection = await stack.enter_async_context(discord.connected(app))
            await connection
    return True
