"""HTTP mode: one aiohttp server with POST /slack/events (every Slack request) and GET /healthz."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp

EVENTS_PATH = "/slack/events"  # events, slash commands and interactivity all arrive here
HEALTH_PATH = "/healthz"

log = logging.getLogger(__name__)


def slack_web_app(bolt: AsyncApp) -> web.Application:
    async def slack_request(request: web.Request) -> web.Response:
        try:
            # bolt parses the body before it checks the signature: an unreadable body may come from anyone
            bolt_request = await to_bolt_request(request)
        except ValueError:
            log.warning("Slack request with an unreadable body refused")
            return web.Response(status=400, text="unreadable body")
        return await to_aiohttp_response(await bolt.async_dispatch(bolt_request))

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post(EVENTS_PATH, slack_request)
    app.router.add_get(HEALTH_PATH, health)
    return app


@asynccontextmanager
async def serving_http(bolt: AsyncApp, host: str, port: int) -> AsyncIterator[str]:
    """Serve until the block ends; yields the server's base URL (port 0 picks a free port)."""
    runner = web.AppRunner(slack_web_app(bolt), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await runner.cleanup()
