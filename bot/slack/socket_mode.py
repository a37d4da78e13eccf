"""Socket Mode: bolt's aiohttp AsyncSocketModeHandler, used when SLACK_APP_TOKEN is set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp


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
