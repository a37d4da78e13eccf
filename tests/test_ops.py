"""The operator's endpoints on a real `python -m bot run` process, Discord alone and Slack in Socket
Mode, against the local fakes: /healthz, /readyz (503 while the platform is unreachable, 200 once
connected again, on both) and /metrics counting the message, turn and approval the test caused."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import envelope, message
from tests.ports import free_port
from tests.test_two_processes import wait_for_port

PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'


@asynccontextmanager
async def bot_process(tmp_path: Path, sections: dict[str, dict[str, Any]], env: dict[str, str]) -> AsyncIterator[str]:
    """`python -m bot run` with the ops endpoints on a free port; yields their base URL."""
    port = free_port()
    config = write_config(tmp_path, {**sections, "ops": {"host": "127.0.0.1", "port": port}})
    environ = {**os.environ, **env}
    for unused in (
        "SLACK_SIGNING_SECRET",
        "GOOGLE_API_KEY",
        "OPENAI_API_KEY",
        *(() if "SLACK_BOT_TOKEN" in env else ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")),
        *(() if "DISCORD_TOKEN" in env else ("DISCORD_TOKEN",)),
    ):
        environ.pop(unused, None)
    with open(tmp_path / "bot.log", "wb") as log:
        bot = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config), "run", cwd=REPO, env=environ, stdout=log, stderr=log
        )
    try:
        await wait_for_port(port, bot)
        yield f"http://127.0.0.1:{port}"
    finally:
        if bot.returncode is None:
            bot.terminate()
            await asyncio.wait_for(bot.wait(), 30)
    output = (tmp_path / "bot.log").read_text()
    assert bot.returncode == 0, output
    # discord.py (discord.shard, as the client is sharded) and Slack's Socket Mode client log each
    # refused reconnect with its traceback; nothing else may.
    logged_with = [chunk.rstrip("\n").rsplit("\n", 1)[-1] for chunk in output.split("Traceback")[:-1]]
    refused = ("discord.shard", "slack_bolt.AsyncApp: Failed to connect")
    assert all(any(logger in line for logger in refused) for line in logged_with), output
    for secret in env.values():
        assert secret not in output


async def get(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as response:
        return response.status, await response.text()


async def wait_for_status(http: aiohttp.ClientSession, url: str, status: int, timeout: float = 60) -> str:
    async with asyncio.timeout(timeout):
        while True:
            got, text = await get(http, url)
            if got == status:
                return text
            await asyncio.sleep(0.2)


def metric(text: str, name: str, labels: str = "") -> float:
    """A sample's value in Prometheus text format; 0 when absent."""
    pattern = re.escape(name + (f"{{{labels}}}" if labels else "")) + r" ([0-9.e+]+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def wait_for_metric(http: aiohttp.ClientSession, url: str, name: str, labels: str, at_least: float) -> str:
    async with asyncio.timeout(60):
        while True:
            _, text = await get(http, f"{url}/metrics")
            if metric(text, name, labels) >= at_least:
                return text
            await asyncio.sleep(0.2)


async def test_discord_only_health_readiness_and_metrics(tmp_path: Path) -> None:
    async with FakeDiscord() as discord, aiohttp.ClientSession() as http:
        sections = {"discord": {"api_base_url": discord.api_url, "gateway_url": discord.gateway_url}}
        async with bot_process(tmp_path, sections, {"DISCORD_TOKEN": discord.token}) as url:
            assert await get(http, f"{url}/healthz") == (200, "ok\n")
            await discord.wait_until_guild_sent(timeout=60)
            assert await wait_for_status(http, f"{url}/readyz", 200) == "ready\n"

            await discord.gateway_outage()  # Discord's gateway goes away; the client retries, refused
            async with asyncio.timeout(60):
                while not discord.gateway_refusals:
                    await asyncio.sleep(0.05)
            reasons = await wait_for_status(http, f"{url}/readyz", 503)
            assert "discord: not connected to the gateway" in reasons
            assert await get(http, f"{url}/healthz") == (200, "ok\n")  # alive all the same

            discord.gateway_down = False  # back: discord.py resumes on its own
            assert await wait_for_status(http, f"{url}/readyz", 200, timeout=120) == "ready\n"

            await discord.send_message("Sage, hello from Discord")
            await discord.wait_for_webhook_executes(1, timeout=30)
            text = await wait_for_metric(http, url, "roundtable_turns_total", 'outcome="spoke"', 1)
            assert metric(text, "roundtable_messages_received_total", 'platform="discord"') == 1
            assert metric(text, "roundtable_rounds_total") == 1
            assert metric(text, "roundtable_approvals", 'status="pending"') == 0

            await discord.send_message(PUBLISH)
            channel_messages = rf"/channels/{p.TEXT_CHANNEL_ID}/messages"
            await discord.wait_for_calls(
                "POST", channel_messages, where=lambda c: "publish_post" in str(c.json), timeout=30
            )
            text = await wait_for_metric(http, url, "roundtable_approvals", 'status="pending"', 1)
            assert metric(text, "roundtable_messages_received_total", 'platform="discord"') == 2
            assert "roundtable_event_loop_lag_seconds" in text and "roundtable_channel_queue_depth" in text


def socket_event(text: str, number: int) -> dict[str, Any]:
    payload = envelope(message(text, f"170000300{number}.000100"), f"EvOps{number}")
    return {"envelope_id": f"env-{number}", "type": "events_api", "payload": payload}


async def test_slack_socket_mode_health_readiness_and_metrics(tmp_path: Path) -> None:
    async with FakeSlackApi() as slack, aiohttp.ClientSession() as http:
        sections = {"slack": {"api_base_url": slack.api_url}}
        env = {"SLACK_BOT_TOKEN": "xoxb-ops-test", "SLACK_APP_TOKEN": "xapp-ops-test"}
        async with bot_process(tmp_path, sections, env) as url:
            assert await wait_for_status(http, f"{url}/readyz", 200) == "ready\n"
            assert slack.socket_connections == 1
            assert await get(http, f"{url}/healthz") == (200, "ok\n")

            await slack.socket_outage()  # Socket Mode goes away; the client reconnects, refused
            await slack.wait_until(lambda: slack.socket_refusals > 0, timeout=60)
            reasons = await wait_for_status(http, f"{url}/readyz", 503)
            assert "slack: Socket Mode is not connected" in reasons
            assert await get(http, f"{url}/healthz") == (200, "ok\n")  # alive all the same

            slack.socket_down = False  # back: the client reconnects on its own
            assert await wait_for_status(http, f"{url}/readyz", 200, timeout=120) == "ready\n"
            assert slack.socket_connections == 2

            await slack.send_envelope(socket_event("Sage, hello over the socket", 1))
            await slack.wait_until(
                lambda: any(c.args.get("username") == "Sage" for c in slack.calls_to("chat.postMessage")), timeout=30
            )
            text = await wait_for_metric(http, url, "roundtable_turns_total", 'outcome="spoke"', 1)
            assert metric(text, "roundtable_messages_received_total", 'platform="slack"') == 1

            await slack.send_envelope(socket_event(PUBLISH, 2))
            text = await wait_for_metric(http, url, "roundtable_approvals", 'status="pending"', 1)
            assert metric(text, "roundtable_messages_received_total", 'platform="slack"') == 2
            assert "roundtable_model_call_seconds" in text
