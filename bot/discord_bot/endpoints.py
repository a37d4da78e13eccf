"""Pointing discord.py at another Discord: a proxy, or the fake Discord the tests start on 127.0.0.1.

discord.py 2.7 has no per-client setting for either address, so this sets the two class-level
defaults it reads, and puts them back afterwards:

- REST: `discord.http.Route.BASE`. Every request is built from it: the bot's own HTTP client,
  webhook executes, and interaction callbacks and followups (discord/webhook/async_.py imports
  the same Route). discord.py's own `_set_api_version` changes the API version the same way.
- Gateway: `discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`. `Client.connect` opens its first
  connection there (2.7 no longer asks GET /gateway); later resumes use the `resume_gateway_url`
  that READY names, and an invalidated session starts over at DEFAULT_GATEWAY.

Both are process-wide, so one process talks to one Discord at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route


@contextmanager
def discord_endpoints(api_base_url: str, gateway_url: str) -> Iterator[None]:
    """Use api_base_url (e.g. "https://discord.com/api/v10") and, when set, gateway_url while inside."""
    saved_base, saved_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = api_base_url.rstrip("/")
    if gateway_url:
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved_base, saved_gateway
