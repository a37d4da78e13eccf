"""Rapid messages over Slack HTTP are stored in the order they arrived and answered in that order,
with no reply seeing a later message: the real bolt app, signed requests, SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

from storage import history
from storage.records import LineKind
from tests.fakes.slack_api import TEAM_ID, FakeSlackApi
from tests.fakes.slack_payloads import message
from tests.slack_harness import StartSlack

CHANNEL = "CRAPID"
AUTHORS = {"UHUMAN": "Ana", "UBEN": "Ben", "UCARA": "Cara"}


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def test_thirty_rapid_messages_are_stored_and_answered_in_order(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    fake_slack.user_names.update(AUTHORS)
    fake_slack.slow_users = {"UHUMAN": 0.3}  # Ana's name takes long to look up; the others' do not
    users = list(AUTHORS)
    unlimited = {"limits": {"user_messages_per_minute": 100, "channel_rounds_per_minute": 100}}  # a burst, not a flood
    async with start_slack(unlimited) as slack:
        for number in range(30):
            event = message(
                f"Sage, note {number:02d}", f"1700001000.{number:06d}", channel=CHANNEL, user=users[number % 3]
            )
            assert await slack.send_event(event, f"EvRapid{number}") == 200  # answered once stored
        await slack.bot.wait_idle()

        key = f"slack:{TEAM_ID}:{CHANNEL}"
        lines = await history.recent_channel_lines(slack.bot.roundtable.db, key, limit=100)
        said = [(line.author_name, line.text) for line in lines if line.kind is LineKind.HUMAN]
        assert said == [(AUTHORS[users[n % 3]], f"Sage, note {n:02d}") for n in range(30)]

        replies = [post["text"] for post in slack.posts_to(CHANNEL) if post.get("username") == "Sage"]
        quoted = [int(n) for reply in replies for n in re.findall(r"note (\d\d)", reply)]
        assert quoted == list(range(30))  # one reply per message, in order, each quoting its own
