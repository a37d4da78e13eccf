"""/usage on every surface: the console, Slack's slash command and Discord's app command answer the
asker alone with today's and the last 30 days' tokens per persona and the moderator's."""

from __future__ import annotations

import time
from typing import Any

from bot.inbound import Inbound
from bot.usage import utc_day
from storage import usage
from storage.database import Database
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import KEY as SLACK_KEY
from tests.slack_harness import SlackHarness

DISCORD_KEY = f"discord:{p.TEXT_CHANNEL_ID}"


async def seed(db: Database, key: str) -> None:
    """What model calls in this channel stored: Sage's turns today, the moderator's, and Nova's a week ago."""
    today, week_ago = utc_day(time.time()), utc_day(time.time() - 7 * 86400)
    await usage.add_usage(
        db,
        {
            (today, key, "sage", "persona", "gemini-3.8-flash"): (2, 1000, 200, 50),
            (today, key, "", "moderator", "gemini-3.5-flash-lite"): (3, 900, 60, 0),
            (week_ago, key, "nova", "persona", "gemini-3.8-flash"): (1, 500, 100, 0),
        },
    )


def check(report: str) -> None:
    assert "- Sage: 1,250 today, 1,250 in 30 days (2 calls; 50 thinking)" in report
    assert "- the moderator: 960 today, 960 in 30 days (3 calls; 0 thinking)" in report
    assert "- Nova: 0 today, 600 in 30 days (1 call; 0 thinking)" in report


async def test_usage_on_the_console(open_test_app: Any) -> None:
    key = "console:general"
    async with open_test_app() as app:
        await seed(app.db, key)
        reply = await app.service.handle(Inbound(key, "ana", "Ana", "/usage"))
    assert reply is not None and reply.ok
    check(reply.reply)


async def test_usage_on_slack(slack: SlackHarness) -> None:
    await seed(slack.bot.roundtable.db, SLACK_KEY)
    status, _ = await slack.command("/usage", "")
    assert status == 200
    [reply] = slack.replies_to_command()
    assert reply["response_type"] == "ephemeral"
    check(reply["text"])
    assert slack.posts() == []  # nobody else sees it


async def test_usage_on_discord(fake: FakeDiscord, open_bot: Any) -> None:
    async with open_bot() as bot:
        await seed(bot.app.db, DISCORD_KEY)
        asked = await fake.send_slash_command("usage", {}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
    assert followup.json["flags"] == 64  # for the asker alone
    check(followup.json["content"])
