"""👍 and 👎 on Slack: reactions on a persona's post, through the real bolt app against the fake Slack
Web API (tests/slack_harness.py), stored once per person and post with the persona and the model,
taken back with the reaction, a 👎's reason from the thread, and /usage's share."""

from __future__ import annotations

from typing import Any

from storage import votes
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_payloads import CHANNEL, HUMAN, message, reaction
from tests.slack_harness import SlackHarness

ASKED = "1700000001.000100"


async def persona_post(slack: SlackHarness, text: str = "Sage, what do you make of this?", ts: str = ASKED) -> str:
    """The ts Slack gave the persona's answer to a human line."""
    await slack.say(text, ts)
    [answer] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args.get("username") == "Sage"][-1:]
    return str(answer.answer["ts"])


async def react(slack: SlackHarness, emoji: str, ts: str, event_id: str, **extra: Any) -> None:
    assert await slack.send_event(reaction(emoji, ts, **extra), event_id) == 200
    await slack.bot.wait_idle()


async def votes_on_message(slack: SlackHarness, ts: str) -> list[tuple[str, int, str | None]]:
    post = await votes.post_of(slack.bot.roundtable.db, f"slack:{CHANNEL}:{ts}")
    assert post is not None, "the persona's post was not noted"
    return await votes.votes_on(slack.bot.roundtable.db, post.post)


async def test_a_thumbs_up_is_one_vote_per_person_and_post_with_its_persona_and_model(slack: SlackHarness) -> None:
    ts = await persona_post(slack)
    await react(slack, "+1", ts, "EvUp1")
    await react(slack, "+1", ts, "EvUp2")  # the same again (a retry, or a second client)
    await react(slack, "+1::skin-tone-3", ts, "EvUp3", user="UBEN")

    assert await votes_on_message(slack, ts) == [("UBEN", 1, None), (HUMAN, 1, None)]
    post = await votes.post_of(slack.bot.roundtable.db, f"slack:{CHANNEL}:{ts}")
    assert (
        post is not None and post.persona_id == "sage" and post.model == "ScriptedModels"
    )  # the harness's model double


async def test_a_new_vote_replaces_the_old_and_taking_it_back_removes_it(slack: SlackHarness) -> None:
    ts = await persona_post(slack)
    await react(slack, "+1", ts, "EvUp")
    await react(slack, "-1", ts, "EvDown")
    assert await votes_on_message(slack, ts) == [(HUMAN, -1, None)]

    await react(slack, "+1", ts, "EvUpGone", removed=True)  # the 👍 given before: nothing of it is left
    assert await votes_on_message(slack, ts) == [(HUMAN, -1, None)]
    await react(slack, "-1", ts, "EvDownGone", removed=True)
    assert await votes_on_message(slack, ts) == []


async def test_reactions_on_a_humans_or_the_apps_own_post_and_other_emoji_are_no_votes(slack: SlackHarness) -> None:
    ts = await persona_post(slack)
    await slack.command("/moderate", "on 3")
    [notice] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args.get("username") == "Roundtable"]

    await react(slack, "+1", ASKED, "EvOnHuman")  # the person's own line
    await react(slack, "+1", str(notice.answer["ts"]), "EvOnNotice")
    await react(slack, "eyes", ts, "EvEyes")
    await react(slack, "heart", ts, "EvHeart")

    assert await votes_on_message(slack, ts) == []
    assert await votes.post_of(slack.bot.roundtable.db, f"slack:{CHANNEL}:{ASKED}") is None
    assert await votes.post_of(slack.bot.roundtable.db, f"slack:{CHANNEL}:{notice.answer['ts']}") is None


async def test_a_reaction_event_missing_its_fields_is_acknowledged_and_the_bot_goes_on(slack: SlackHarness) -> None:
    ts = await persona_post(slack)
    broken = [
        {"type": "reaction_added", "user": HUMAN, "reaction": "+1"},  # no item
        {"type": "reaction_added", "user": HUMAN, "reaction": "+1", "item": "C0GENERAL"},
        {"type": "reaction_added", "user": HUMAN, "reaction": "+1", "item": {"type": "file", "file": "F1"}},
        {"type": "reaction_added", "user": HUMAN, "item": {"type": "message", "channel": CHANNEL, "ts": ts}},
        {"type": "reaction_removed", "reaction": "+1", "item": {"type": "message", "channel": CHANNEL, "ts": 5}},
    ]
    for number, event in enumerate(broken):
        assert await slack.send_event(event, f"EvBroken{number}") == 200
    await slack.bot.wait_idle()
    assert await votes_on_message(slack, ts) == []

    later = await persona_post(slack, "Sage, still there?", "1700000009.000100")
    await react(slack, "+1", later, "EvAfter")
    assert await votes_on_message(slack, later) == [(HUMAN, 1, None)]


async def test_a_thumbs_down_keeps_its_authors_next_reply_in_the_posts_thread_as_its_reason(
    slack: SlackHarness,
) -> None:
    ts = await persona_post(slack)
    await react(slack, "-1", ts, "EvDown")
    await react(slack, "-1", ts, "EvDownBen", user="UBEN")
    await slack.say("Sage, answer in the channel", "1700000003.000100")  # not in the thread: no reason
    await slack.say("It does not answer what I asked", "1700000004.000100", thread_ts=ts)
    await slack.say("and one more thing", "1700000005.000100", thread_ts=ts)  # the next one only

    assert await votes_on_message(slack, ts) == [("UBEN", -1, None), (HUMAN, -1, "It does not answer what I asked")]


async def test_usage_shows_each_personas_share_of_thumbs_up(slack: SlackHarness) -> None:
    sage = await persona_post(slack)
    await slack.say("Nova, and you?", "1700000002.000100")
    [nova_post] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args.get("username") == "Nova"]
    nova = str(nova_post.answer["ts"])
    await react(slack, "+1", sage, "EvSage1")
    await react(slack, "+1", sage, "EvSage2", user="UBEN")
    await react(slack, "-1", sage, "EvSage3", user="UCARL")
    await react(slack, "-1", nova, "EvNova")

    await slack.command("/usage", "")
    [reply] = slack.replies_to_command()
    assert "- Sage: 67% 👍 (2 👍, 1 👎)" in reply["text"]
    assert "- Nova: 0% 👍 (0 👍, 1 👎)" in reply["text"]


async def test_rate_typed_on_slack_points_to_the_reactions(slack: SlackHarness) -> None:
    ts = await persona_post(slack)
    assert await slack.send_event(message(f"<@{BOT_USER_ID}> /rate 1 up", "1700000007.000100"), "EvRateTyped") == 200
    await slack.bot.wait_idle()
    [answer] = slack.ephemerals()
    assert "react to a persona's post with 👍 or 👎" in answer["text"]
    assert await votes_on_message(slack, ts) == []
