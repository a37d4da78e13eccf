"""The Slack test harness: the real bolt AsyncApp served over HTTP against a fake Slack Web API,
with signed requests. Its fixtures (fake_slack, start_slack, slack) are registered in conftest.py."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.slack.app import build_slack_app, make_web_client
from bot.slack.http_server import serving_http
from bot.slack.port import slack_port
from bot.slack.slack_bot import SlackBot
from graph.models.base import Models
from tests.fakes.slack_api import APP_ID, TEAM_ID, FakeSlackApi
from tests.fakes.slack_payloads import (
    CHANNEL,
    HUMAN,
    SIGNING_SECRET,
    button_click,
    buttons_of,
    envelope,
    message,
    signed_headers,
)

BOT_TOKEN = "xoxb-fake-bot-token-must-never-be-logged"
KEY = f"slack:{TEAM_ID}:{CHANNEL}"
APPROVER = "UAPPROVER"  # named "Bea" by the fake's users.info
# Slack waits this long for an event's answer, then sends the event again (http_timeout):
# https://docs.slack.dev/apis/events-api/, "Responding to events" and "Error handling".
EVENT_DEADLINE_SECONDS = 3.0

Sections = dict[str, dict[str, Any]]


@dataclass
class SlackHarness:
    fake: FakeSlackApi
    bot: SlackBot
    url: str
    http: aiohttp.ClientSession
    _commands: int = 0
    _interactions: int = 0
    # Slack gives every invocation a trigger_id of its own: unique across restarts of the harness too.
    _run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    async def post_signed(
        self,
        body: str,
        content_type: str,
        *,
        timestamp: int | None = None,
        forged: bool = False,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        sent = {**signed_headers(body, content_type, timestamp=timestamp), **(headers or {})}
        if forged:
            sent["X-Slack-Signature"] = "v0=" + "0" * 64
        async with self.http.post(f"{self.url}/slack/events", data=body.encode(), headers=sent) as response:
            return response.status, await response.text()

    async def send_event(self, event: dict[str, Any], event_id: str, **options: Any) -> int:
        status, _ = await self.post_signed(json.dumps(envelope(event, event_id)), "application/json", **options)
        return status

    async def say(self, text: str, ts: str, **extra: Any) -> None:
        """A human channel message, then wait until its round has run."""
        event = message(text, ts, **extra)
        self.fake.messages[(event["channel"], ts)] = event  # Slack has it, e.g. as a thread's parent
        assert await self.send_event(event, f"Ev{ts.replace('.', '')}") == 200
        await self.bot.wait_idle()

    async def command(
        self, command: str, text: str, user_id: str = HUMAN, *, channel: str = CHANNEL, wait: bool = True
    ) -> tuple[int, str]:
        """A slash command in `channel`, then (unless not `wait`) wait until its background work (and any
        announcement) is done."""
        self._commands += 1
        form = {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": "general" if channel == CHANNEL else channel.lower(),
            "user_id": user_id,
            "user_name": "ana" if user_id == HUMAN else "bea",
            "command": command,
            "text": text,
            "api_app_id": APP_ID,
            "response_url": self.fake.response_url(f"cmd{self._commands}"),
            "trigger_id": f"trigger.{self._run}.{self._commands}",
        }
        result = await self.post_signed(urlencode(form), "application/x-www-form-urlencoded")
        if wait:
            await self.bot.wait_idle()
        return result

    async def interact(self, payload: dict[str, Any]) -> int:
        """An interactivity request (form field `payload`, as Slack sends it), then wait for its work."""
        status, _ = await self.post_signed(
            urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
        )
        await self.bot.wait_idle()
        return status

    async def click(self, action_id: str, request: dict[str, Any], user: str = APPROVER) -> int:
        """Click the button `action_id` of a posted approval request (its value is taken from the blocks)."""
        self._interactions += 1
        payload = button_click(
            request,
            action_id,
            user,
            response_url=self.fake.response_url(f"click{self._interactions}"),
            trigger=f"trigger.click.{self._interactions}",
        )
        return await self.interact(payload)

    async def submit_feedback(self, view: dict[str, Any], feedback: str, user: str = APPROVER) -> int:
        """Submit the modal that views.open showed, with `feedback` typed into its text input."""
        [block] = view["blocks"]
        payload = {
            "type": "view_submission",
            "team": {"id": TEAM_ID, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "trigger_id": "trigger.submit",
            "view": {
                **view,
                "id": "V0FEEDBACK",
                "team_id": TEAM_ID,
                "state": {
                    "values": {
                        block["block_id"]: {
                            block["element"]["action_id"]: {"type": "plain_text_input", "value": feedback}
                        }
                    }
                },
            },
            "response_urls": [],
        }
        return await self.interact(payload)

    async def submit_view(self, view: dict[str, Any], typed: str, user: str = APPROVER) -> tuple[int, str]:
        """Submit a one-input modal that views.open showed, with `typed` in its input: the HTTP status
        and the body of the ack (a modal answered with errors stays open)."""
        [block] = view["blocks"]
        values = {block["block_id"]: {block["element"]["action_id"]: {"type": "plain_text_input", "value": typed}}}
        payload = {
            "type": "view_submission",
            "team": {"id": TEAM_ID, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
            "api_app_id": APP_ID,
            "token": "legacy-verification-token",
            "trigger_id": "trigger.submit",
            "view": {**view, "id": "V0SUBMITTED", "team_id": TEAM_ID, "state": {"values": values}},
            "response_urls": [],
        }
        answer = await self.post_signed(
            urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
        )
        await self.bot.wait_idle()
        return answer

    def posts(self) -> list[dict[str, Any]]:
        return self.fake.delivered_posts()

    def approval_requests(self) -> list[dict[str, Any]]:
        """Delivered approval requests, each with the ts Slack gave it."""
        delivered = [c for c in self.fake.calls_to("chat.postMessage") if c.error is None and c.status == 200]
        return [{**c.args, "ts": c.answer["ts"]} for c in delivered if buttons_of(c.args)]

    def updates(self) -> list[dict[str, Any]]:
        return [call.args for call in self.fake.calls_to("chat.update")]

    def ephemerals(self) -> list[dict[str, Any]]:
        return [call.args for call in self.fake.calls_to("chat.postEphemeral")]

    def posts_to(self, channel: str) -> list[dict[str, Any]]:
        return [post for post in self.posts() if post["channel"] == channel]

    def replies_to_command(self) -> list[dict[str, Any]]:
        return [call.args for call in self.fake.calls_to("response_url")]


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlackApi]:
    async with FakeSlackApi() as fake:
        yield fake


StartSlack = Callable[..., AbstractAsyncContextManager[SlackHarness]]


@pytest.fixture
def start_slack(open_test_app, make_config, fake_slack: FakeSlackApi) -> StartSlack:
    """`async with start_slack(sections, models=...) as slack:` the real app, with UAPPROVER as the approver.

    Every start uses the same data directory, so a second start is the same bot after a restart."""

    @asynccontextmanager
    async def start(sections: Sections | None = None, *, models: Models | None = None) -> AsyncIterator[SlackHarness]:
        merged: Sections = {
            "slack": {"api_base_url": fake_slack.api_url},
            "approvals": {"approvers": {"slack": [APPROVER]}},
        }
        for section, values in (sections or {}).items():
            merged.setdefault(section, {}).update(values)
        client = make_web_client(BOT_TOKEN, fake_slack.api_url)
        config = make_config(merged)
        async with open_test_app(merged, outbound=lambda db: slack_port(config, client, db), models=models) as app:
            bot = build_slack_app(app, app.config.settings.slack, SIGNING_SECRET, BOT_TOKEN, client)
            async with serving_http(bot.bolt, "127.0.0.1", 0) as url, aiohttp.ClientSession() as http:
                yield SlackHarness(fake_slack, bot, url, http)
                await bot.wait_idle()
                await bot.close()

    return start


@pytest.fixture
async def slack(start_slack: StartSlack) -> AsyncIterator[SlackHarness]:
    async with start_slack() as harness:
        yield harness
