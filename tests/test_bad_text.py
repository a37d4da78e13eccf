"""Text no database can store (a lone UTF-16 surrogate, which JSON's \\ud800 escape can carry) never
costs a message: it is stored with U+FFFD in its place, acknowledged with 200, and answered."""

from __future__ import annotations

import json

from storage import history
from tests.fakes.slack_payloads import envelope, message
from tests.slack_harness import KEY, SlackHarness


async def test_a_slack_message_with_lone_surrogates_is_stored_with_replacements_and_answered(
    slack: SlackHarness,
) -> None:
    text = "Sage, what about \ud800 this \udfff and \udbff\udc00?"  # the last pair is a valid one
    body = json.dumps(envelope(message(text, "1700000300.000100"), "EvSurrogate"))
    assert "\\ud800" in body  # on the wire as the JSON escape Slack may send
    status, _ = await slack.post_signed(body, "application/json")
    await slack.bot.wait_idle()

    assert status == 200
    [human, *_] = await history.recent_channel_lines(slack.bot.roundtable.db, KEY, limit=10)
    assert human.text == "Sage, what about \ufffd this \ufffd and \U0010fc00?"
    [reply] = slack.posts()
    assert reply["username"] == "Sage"
