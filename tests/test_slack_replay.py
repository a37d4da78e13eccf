"""A replayed slash command runs once: Slack gives every invocation its own trigger_id.

The same signed request is posted again (within the 5 minutes its signature stays valid), also
after a restart, over HTTP to the real bolt app (tests/test_slack.py's harness).
"""

from __future__ import annotations

from urllib.parse import urlencode

from storage import channels
from tests.fakes.slack_api import APP_ID, TEAM_ID
from tests.fakes.slack_payloads import CHANNEL, HUMAN
from tests.slack_harness import KEY, SlackHarness, StartSlack

FORM = "application/x-www-form-urlencoded"


def moderate_on(slack: SlackHarness, max_turns: int, trigger_id: str) -> str:
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "team_domain": "fake",
            "channel_id": CHANNEL,
            "channel_name": "general",
            "user_id": HUMAN,
            "user_name": "ana",
            "command": "/moderate",
            "text": f"on {max_turns}",
            "api_app_id": APP_ID,
            "response_url": slack.fake.response_url(trigger_id),
            "trigger_id": trigger_id,
        }
    )


def announcements(slack: SlackHarness) -> list[str]:
    return [post["text"] for post in slack.posts() if post["text"].startswith("Moderation is on")]


async def test_a_replayed_slash_command_runs_once_also_after_a_restart(start_slack: StartSlack) -> None:  # noqa: F811
    async with start_slack() as slack:
        form = moderate_on(slack, 3, "13345224609.738474920.8088930838d88f008e0")
        for _ in range(5):
            assert await slack.post_signed(form, FORM) == (200, "")
        await slack.bot.wait_idle()
        assert announcements(slack) == ["Moderation is on: the moderator picks who speaks next, up to 3 turns a round."]
        await channels.set_moderated(slack.bot.roundtable.db, KEY, False, None)

    async with start_slack() as restarted:
        assert await restarted.post_signed(form, FORM) == (200, "")
        await restarted.bot.wait_idle()
        channel = await channels.get_channel(restarted.bot.roundtable.db, KEY)
        assert channel is not None and not channel.moderated
        assert len(announcements(restarted)) == 1  # still the first one

        assert await restarted.post_signed(moderate_on(restarted, 4, "another.trigger"), FORM) == (200, "")
        await restarted.bot.wait_idle()
        assert announcements(restarted)[-1].endswith("up to 4 turns a round.")
