"""The Discord test harness: the real discord.py client against the fake Discord REST and gateway
server on 127.0.0.1. Its fixtures (fake, open_bot) are registered in conftest.py."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from bot.config import Config
from bot.discord_bot.runner import DiscordBot, discord_bot
from graph.models.base import Models
from tests.fakes.discord_server import FakeDiscord


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


@pytest.fixture
def open_bot(make_config: Callable[..., Config], fake: FakeDiscord) -> Callable[..., Any]:
    """`async with open_bot(...) as bot:` runs the whole Discord bot against the fake, connected."""

    def opener(
        discord_settings: dict[str, Any] | None = None,
        *,
        models: Models | None = None,
        sections: dict[str, dict[str, Any]] | None = None,
        **bot_options: Any,
    ) -> Any:
        config = make_config(
            {
                **(sections or {}),
                "discord": {"api_base_url": fake.api_url, "gateway_url": fake.gateway_url, **(discord_settings or {})},
            }
        )
        environ = {"DISCORD_TOKEN": fake.token}
        return _connected(discord_bot(config, environ, models=models, rng=random.Random(7), **bot_options), fake)

    return opener


@asynccontextmanager
async def _connected(bot_context: Any, fake: FakeDiscord) -> AsyncIterator[DiscordBot]:
    connections = fake.guilds_sent + 1  # the same fake may see a second client: a restart
    async with bot_context as bot:
        guild_sent = asyncio.ensure_future(fake.wait_until_guild_sent(count=connections))
        await asyncio.wait({guild_sent, bot.connection}, return_when=asyncio.FIRST_COMPLETED)
        if not guild_sent.done():
            guild_sent.cancel()
            raise AssertionError(f"the client stopped before it connected: {bot.connection.exception()!r}")
        guild_sent.result()
        yield bot


async def settle(bot: DiscordBot) -> None:
    """Until every queued round has run; bounded, so a bot talking to itself fails instead of hanging."""
    await asyncio.wait_for(bot.app.service.wait_idle(), 10)
