"""The real bolt AsyncApp over HTTP (and Socket Mode) against a fake Slack Web API, with signed requests."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from bot.slack.app import build_slack_app
from bot.slack.client import make_web_client
from bot.slack.http_server import serving_http
from bot.slack.port import SlackPort
from bot.slack.seen import RecentlySeen
from bot.slack.slack_bot import SlackBot
from bot.slack.socket_mode import connected_socket_mode
from storage import channels
from tests.fakes.slack_api import APP_ID, BOT_USER_ID, TEAM_ID, FakeSlackApi

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-fake-bot-token-must-never-be-logged"
CHANNEL = "C0GENERAL"
KEY = f"slack:{TEAM_ID}:{CHANNEL}"
HUMAN = "UHUMAN"


def message(text: str, ts: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "channel": CHANNEL, "user": HUMAN, "text": text, "ts": ts, "channel_type": "channel", **extra}


def envelope(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": {**event, "event_ts": event.get("ts", "1")},
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


@dataclass
class SlackHarness:
    fake: FakeSlackApi
    bot: SlackBot
    url: str
    http: aiohttp.ClientSession
    _commands: int = 0

    async def post_signed(
        self,
        body: str,
        content_type: str,
        *,
        timestamp: int | None = None,
        forged: bool = False,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=stamp, body=body)
        if forged:
            signature = "v0=" + "0" * 64
        sent = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
            **(headers or {}),
        }
        async with self.http.post(f"{self.url}/slack/events", data=body.encode(), headers=sent) as response:
            return response.status, await response.text()

    async def send_event(self, event: dict[str, Any], event_id: str, **options: Any) -> int:
        status, _ = await self.post_signed(json.dumps(envelope(event, event_id)), "application/json", **options)
        return status

    async def say(self, text: str, ts: str, **extra: Any) -> None:
        """A human channel message, then wait until its round has run."""
        assert await self.send_event(message(text, ts, **extra), f"Ev{ts.replace('.', '')}") == 200
        await self.bot.wait_idle()

    async def command(self, command: str, text: str) -> tuple[int, str]:
        """A slash command, then wait until its background work (and any announcement) is done."""
        self._commands += 1
        form = {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "team_domain": "fake",
            "channel_id": CHANNEL,
            "channel_name": "general",
            "user_id": HUMAN,
            "user_name": "ana",
            "command": command,
            "text": text,
            "api_app_id": APP_ID,
            "response_url": self.fake.response_url(f"cmd{self._commands}"),
            "trigger_id": f"trigger.{self._commands}",
        }
        result = await self.post_signed(urlencode(form), "application/x-www-form-urlencoded")
        await self.bot.wait_idle()
        return result

    def posts(self) -> list[dict[str, Any]]:
        return self.fake.delivered_posts()

    def replies_to_command(self) -> list[dict[str, Any]]:
        return [call.args for call in self.fake.calls_to("response_url")]


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


@pytest.fixture
async def slack(open_test_app, fake_slack: FakeSlackApi) -> AsyncIterator[SlackHarness]:
    client = make_web_client(BOT_TOKEN, fake_slack.api_url)
    async with open_test_app({"slack": {"api_base_url": fake_slack.api_url}}, outbound=SlackPort(client)) as app:
        bot = build_slack_app(app, app.config.settings.slack, SIGNING_SECRET, BOT_TOKEN, client)
        async with serving_http(bot.bolt, "127.0.0.1", 0) as url, aiohttp.ClientSession() as http:
            yield SlackHarness(fake_slack, bot, url, http)
            await bot.wait_idle()
            await bot.close()


# -- replies ---------------------------------------------------------------------------------------


async def test_channel_message_gets_a_reply_under_the_personas_name_and_icon(slack: SlackHarness) -> None:
    await slack.say("Sage, what do you make of this?", "1700000001.000100")
    await slack.say("Nova, and you?", "1700000002.000100")

    sage, nova = slack.posts()
    assert sage["channel"] == CHANNEL and "thread_ts" not in sage
    assert (sage["username"], sage["icon_emoji"]) == ("Sage", ":owl:")
    assert "what do you make of this" in sage["text"]
    assert (nova["username"], nova["icon_url"]) == ("Nova", "https://api.dicebear.com/9.x/bottts/png?seed=nova")
    assert "icon_emoji" not in nova
    assert slack.fake.calls_to("users.info")[0].args["user"] == HUMAN  # the author's name is looked up once
    assert len(slack.fake.calls_to("users.info")) == 1


async def test_threaded_message_is_answered_in_its_thread(slack: SlackHarness) -> None:
    await slack.say("Sage, in here please", "1700000003.000200", thread_ts="1700000000.000100")

    [reply] = slack.posts()
    assert reply["thread_ts"] == "1700000000.000100"


async def test_mention_of_the_bot_is_stripped_and_its_twin_events_answered_once(slack: SlackHarness) -> None:
    text = f"<@{BOT_USER_ID}> Sage, hello"
    event = message(text, "1700000004.000100")
    assert await slack.send_event(event, "EvTwinMessage") == 200
    assert await slack.send_event({**event, "type": "app_mention"}, "EvTwinMention") == 200
    await slack.bot.wait_idle()

    [reply] = slack.posts()
    assert "<@" not in reply["text"] and BOT_USER_ID not in reply["text"]


# -- slash commands --------------------------------------------------------------------------------


async def test_moderate_on_status_off_and_bad_arguments(slack: SlackHarness) -> None:
    assert await slack.command("/moderate", "on 3") == (200, "")
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and channel.moderated and channel.max_turns == 3
    [announcement] = slack.posts()
    assert announcement["username"] == "Roundtable" and "Moderation is on" in announcement["text"]

    await slack.command("/moderate", "status")
    [status] = slack.replies_to_command()
    assert status["response_type"] == "ephemeral" and "up to 3 turns" in status["text"]

    await slack.command("/moderate", "off")
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and not channel.moderated
    assert "Moderation is off" in slack.posts()[-1]["text"]

    status_code, body = await slack.command("/moderate", "maybe")
    assert status_code == 200
    usage = json.loads(body)
    assert usage["response_type"] == "ephemeral" and usage["text"].startswith("usage: /moderate on")
    assert len(slack.posts()) == 2 and len(slack.replies_to_command()) == 1


async def test_persona_invite_list_and_dismiss(slack: SlackHarness) -> None:
    await slack.command("/persona", "invite pixel")
    assert slack.posts()[-1]["text"] == "Pixel joined." and slack.posts()[-1]["username"] == "Roundtable"

    await slack.say("Pixel, paint us a picture", "1700000005.000100")
    pixel = slack.posts()[-1]
    assert pixel["username"] == "Pixel"
    assert "icon_emoji" not in pixel and "icon_url" not in pixel  # a unicode emoji avatar has no Slack icon

    await slack.command("/persona", "list")
    [listing] = slack.replies_to_command()
    assert listing["response_type"] == "ephemeral" and "* pixel: Pixel" in listing["text"]

    await slack.command("/persona", "dismiss pixel")
    assert slack.posts()[-1]["text"] == "Pixel left."
    assert "pixel" not in await channels.participants(slack.bot.roundtable.db, KEY)

    await slack.command("/persona", "invite zorg")
    assert "No persona 'zorg'" in slack.replies_to_command()[-1]["text"]
    _, body = await slack.command("/persona", "invite")
    usage = "usage: /persona list | invite PERSONA_ID | dismiss PERSONA_ID"
    assert json.loads(body) == {"response_type": "ephemeral", "text": usage}


async def test_command_typed_after_a_mention_is_answered_privately(slack: SlackHarness) -> None:
    mention = {**message(f"<@{BOT_USER_ID}> /personas", "1700000005.000900"), "type": "app_mention"}
    assert await slack.send_event(mention, "EvTypedCommand") == 200
    await slack.bot.wait_idle()

    [private] = [call.args for call in slack.fake.calls_to("chat.postEphemeral")]
    assert private["user"] == HUMAN and "Personas (* = in this channel)" in private["text"]
    assert slack.posts() == []


# -- trust and dedupe ------------------------------------------------------------------------------


async def test_forged_signature_and_stale_timestamp_are_rejected(slack: SlackHarness) -> None:
    event = message("Sage, are you there?", "1700000006.000100")
    assert await slack.send_event(event, "EvForged", forged=True) == 401
    assert await slack.send_event(event, "EvStale", timestamp=int(time.time()) - 6 * 60) == 401
    form = urlencode({"command": "/moderate", "text": "on"})
    status, _ = await slack.post_signed(form, "application/x-www-form-urlencoded", forged=True)
    assert status == 401
    await slack.bot.wait_idle()

    assert slack.fake.calls_to("chat.postMessage") == []


@pytest.mark.parametrize("remembered", [4096, 0], ids=["memory-and-storage", "storage-only"])
async def test_redelivered_event_gets_exactly_one_reply(slack: SlackHarness, remembered: int) -> None:
    slack.bot.seen = RecentlySeen(capacity=remembered)
    event = message("Sage, only once please", "1700000007.000100")
    assert await slack.send_event(event, "EvRetried") == 200
    for attempt in ("1", "2"):
        retry = {"X-Slack-Retry-Num": attempt, "X-Slack-Retry-Reason": "http_timeout"}
        assert await slack.send_event(event, "EvRetried", headers=retry) == 200
    await slack.bot.wait_idle()

    assert len(slack.fake.calls_to("chat.postMessage")) == 1


async def test_bot_and_edited_messages_are_ignored(slack: SlackHarness) -> None:
    ours = message("Sage, reply to yourself", "1700000008.000100", bot_id="BBOT", user=BOT_USER_ID)
    other_bot = {**message("Sage, hello from a bot", "1700000008.000200", bot_id="BOTHER"), "subtype": "bot_message"}
    other_app = message("Sage, hello from an app's bot user", "1700000008.000250", bot_id="BOTHER", user="UOTHERAPP")
    edited = {
        "type": "message",
        "subtype": "message_changed",
        "channel": CHANNEL,
        "ts": "1700000008.000300",
        "message": {"type": "message", "user": HUMAN, "text": "Sage, edited", "ts": "1700000001.000100"},
    }
    for number, event in enumerate((ours, other_bot, other_app, edited)):
        assert await slack.send_event(event, f"EvIgnored{number}") == 200
    await slack.bot.wait_idle()
    assert slack.fake.calls_to("chat.postMessage") == []

    await slack.say("Sage, but a human is answered", "1700000008.000400")
    assert len(slack.posts()) == 1


async def test_persona_output_can_never_ping(slack: SlackHarness) -> None:
    # The scripted persona quotes the human line, so these control sequences reach its reply.
    await slack.say("Sage, <!channel> <!subteam^S0TEAM> @here wake up", "1700000009.000100")

    [reply] = slack.posts()
    assert "<" not in reply["text"]
    assert "&lt;!channel&gt;" in reply["text"] and "&lt;!subteam^S0TEAM&gt;" in reply["text"]
    assert "@\u200bhere" in reply["text"]


# -- Slack API failures ----------------------------------------------------------------------------


async def test_ratelimited_post_is_retried(slack: SlackHarness) -> None:
    slack.fake.rate_limit_next("chat.postMessage", retry_after=0)
    await slack.say("Sage, try again?", "1700000010.000100")

    first, second = slack.fake.calls_to("chat.postMessage")
    assert (first.status, first.error) == (429, "ratelimited")
    assert (second.status, second.args["username"]) == (200, "Sage")


@pytest.mark.parametrize("error", ["not_in_channel", "invalid_auth"])
async def test_failed_post_is_logged_without_secrets_and_the_app_carries_on(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture, error: str
) -> None:
    caplog.set_level(logging.DEBUG)
    slack.fake.fail_next("chat.postMessage", error)
    await slack.say("Sage, are you in here?", "1700000011.000100")
    await slack.say("Sage, and now?", "1700000012.000100")

    assert [c.error for c in slack.fake.calls_to("chat.postMessage")] == [error, None]
    assert f"chat.postMessage in {KEY} failed: {error}" in caplog.text
    assert BOT_TOKEN not in caplog.text and SIGNING_SECRET not in caplog.text


async def test_health_check(slack: SlackHarness) -> None:
    async with slack.http.get(f"{slack.url}/healthz") as response:
        assert (response.status, await response.text()) == (200, "ok")


# -- Socket Mode -----------------------------------------------------------------------------------


async def test_socket_mode_connects_answers_an_event_and_closes(open_test_app, fake_slack: FakeSlackApi) -> None:
    client = make_web_client(BOT_TOKEN, fake_slack.api_url)
    async with open_test_app({"slack": {"api_base_url": fake_slack.api_url}}, outbound=SlackPort(client)) as app:
        bot = build_slack_app(app, app.config.settings.slack, None, BOT_TOKEN, client)
        async with connected_socket_mode(bot.bolt, "xapp-fake-app-token"):
            await fake_slack.wait_until(lambda: fake_slack.socket_connections == 1)
            [opened] = fake_slack.calls_to("apps.connections.open")
            assert opened.headers["Authorization"] == "Bearer xapp-fake-app-token"

            payload = envelope(message("Sage, over the socket?", "1700000013.000100"), "EvSocket")
            await fake_slack.send_envelope({"envelope_id": "env-1", "type": "events_api", "payload": payload})
            await fake_slack.wait_until(lambda: any(r.get("envelope_id") == "env-1" for r in fake_slack.socket_replies))
            await bot.wait_idle()
            assert [p["username"] for p in fake_slack.delivered_posts()] == ["Sage"]
        await fake_slack.wait_until(lambda: fake_slack.socket_closes == 1)
        await bot.close()
