"""One `python -m bot` process serves Slack and Discord together, against both local fakes: it
answers on both, shows a Discord-born approval on Slack buttons, and a Slack click runs it once,
updates the Slack request and tells the Discord channel."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET, button_click, buttons_of, envelope, message, signed_headers
from tests.ports import free_port
from tests.test_two_processes import wait_for_port

APPROVER = "UAPPROVER"
APPROVALS = "CAPPROVALS"
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'


async def test_one_process_serves_slack_and_discord_and_approves_across_them(tmp_path: Path) -> None:
    async with FakeSlackApi() as slack, FakeDiscord() as discord, aiohttp.ClientSession() as http:
        port = free_port()
        config = write_config(
            tmp_path,
            {
                "slack": {
                    "api_base_url": slack.api_url,
                    "host": "127.0.0.1",
                    "port": port,
                    "approvals_channel": APPROVALS,
                },
                "discord": {"api_base_url": discord.api_url, "gateway_url": discord.gateway_url},
                "approvals": {"surface": "slack", "approvers": {"slack": [APPROVER]}},
            },
        )
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": "xoxb-one",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "DISCORD_TOKEN": discord.token,
        }
        for unused in ("SLACK_APP_TOKEN", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
            env.pop(unused, None)
        with open(tmp_path / "bot.log", "wb") as log:
            bot = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "--config",
                str(config),
                "run",
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=log,
            )
        try:
            await wait_for_port(port, bot)
            await discord.wait_until_guild_sent(timeout=60)

            async def signed(body: str, content_type: str) -> None:
                url = f"http://127.0.0.1:{port}/slack/events"
                async with http.post(url, data=body.encode(), headers=signed_headers(body, content_type)) as response:
                    assert response.status == 200

            # Both platforms answer.
            await signed(
                json.dumps(envelope(message("Sage, hello from Slack", "1700002000.000100"), "EvOne")),
                "application/json",
            )
            await slack.wait_until(
                lambda: any(c.args.get("username") == "Sage" for c in slack.calls_to("chat.postMessage")), timeout=30
            )
            await discord.send_message("Sage, hello from Discord")
            [sage] = await discord.wait_for_webhook_executes(1, timeout=30)
            assert sage.json["username"] == "Sage"

            # A Discord-born approval is shown on Slack buttons, and Discord is told.
            await discord.send_message(PUBLISH)
            await slack.wait_until(
                lambda: any(buttons_of(c.args) for c in slack.calls_to("chat.postMessage")), timeout=30
            )
            [request] = [
                {**c.args, "ts": c.answer["ts"]} for c in slack.calls_to("chat.postMessage") if buttons_of(c.args)
            ]
            assert request["channel"] == APPROVALS and "publish_post" in request["text"]
            channel_messages = rf"/channels/{p.TEXT_CHANNEL_ID}/messages"
            await discord.wait_for_calls(
                "POST", channel_messages, where=lambda c: "sent to Slack" in c.json["content"], timeout=30
            )

            # The Slack click runs it once, updates the Slack request and posts the outcome in Discord.
            click = button_click(
                request, "approval_approve", APPROVER, response_url=slack.response_url("click"), trigger="t.1"
            )
            await signed(urlencode({"payload": json.dumps(click)}), "application/x-www-form-urlencoded")
            [notice] = await discord.wait_for_calls(
                "POST", channel_messages, where=lambda c: "executed" in c.json["content"], timeout=30
            )
            assert "Approved by Bea, executed: posted in #news" in notice.json["content"]
            await slack.wait_until(lambda: bool(slack.calls_to("chat.update")), timeout=30)
            [update] = [c.args for c in slack.calls_to("chat.update")]
            assert (update["channel"], update["ts"]) == (APPROVALS, request["ts"]) and buttons_of(update) == []
            news = [c for c in discord.webhook_executes() if c.json.get("content") == "We launched!"]
            assert len(news) == 1 and news[0].json["username"] == "Nova"
            assert not [c for c in slack.calls_to("chat.postMessage") if c.args.get("text") == "We launched!"]
        finally:
            if bot.returncode is None:
                bot.terminate()
                await asyncio.wait_for(bot.wait(), 30)
        assert bot.returncode == 0, (tmp_path / "bot.log").read_text()
        assert "Traceback" not in (tmp_path / "bot.log").read_text()
