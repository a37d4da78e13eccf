"""👍 and 👎 on Discord: the real discord.py client against the fake gateway (tests/discord_harness.py)
reads MESSAGE_REACTION_ADD and _REMOVE on a persona's webhook post as one vote per person and post,
with the persona and the model, taken back with the reaction; a 👎's reason from the thread; /usage.

Reactions reach the client as gateway events, each handled in a task of its own, so a test waits by
polling storage with a timeout until a reaction it sent last (a barrier) is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from storage import votes
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord

BEN = p.HUMAN_USER_ID + 100
CARL = p.HUMAN_USER_ID + 200


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("not stored in time")
        await asyncio.sleep(0.01)


async def persona_post(fake: FakeDiscord, bot: Any, text: str, *, channel_id: int = p.TEXT_CHANNEL_ID) -> int:
    """The id of the persona's webhook post answering `text`."""
    before = len(fake.webhook_executes())
    await fake.send_message(text, channel_id=channel_id)
    await fake.wait_for_webhook_executes(before + 1)
    await settle(bot)
    return int([m for m in fake.history if m.get("webhook_id")][-1]["id"])


async def votes_on(bot: Any, message_id: int) -> list[tuple[str, int, str | None]]:
    post = await votes.post_of(bot.app.db, f"discord:{message_id}")
    assert post is not None, "the persona's post was not noted"
    return await votes.votes_on(bot.app.db, post.post)


async def voted(bot: Any, message_id: int, expected: list[tuple[str, int, str | None]]) -> None:
    async def check() -> bool:
        return await votes_on(bot, message_id) == expected

    await until(check)


async def test_a_thumbs_up_is_one_vote_per_person_and_post_and_removal_removes_it(fake: FakeDiscord, open_bot) -> None:
    async with open_bot() as bot:
        assert fake.identify_payloads[0]["intents"] & (1 << 10), "GUILD_MESSAGE_REACTIONS"
        post = await persona_post(fake, bot, "Nova, how should we launch?")
        assert await fake.send_reaction(post, "👍")
        assert await fake.send_reaction(post, "👍")  # the same again
        assert await fake.send_reaction(post, "👍🏽", user_id=BEN)  # with a skin tone: a 👍 all the same
        await voted(bot, post, [(str(p.HUMAN_USER_ID), 1, None), (str(BEN), 1, None)])
        stored = await votes.post_of(bot.app.db, f"discord:{post}")
        assert stored is not None and (stored.persona_id, stored.model) == ("nova", "ScriptedModels")

        await fake.send_reaction(post, "👎")  # a new vote replaces the old
        await voted(bot, post, [(str(p.HUMAN_USER_ID), -1, None), (str(BEN), 1, None)])
        await fake.send_reaction(post, "👍", removed=True, user_id=BEN)
        await fake.send_reaction(post, "👎", removed=True)
        await voted(bot, post, [])


async def test_reactions_on_a_humans_message_other_emoji_and_unreadable_ones_are_no_votes(
    fake: FakeDiscord, open_bot
) -> None:
    async with open_bot() as bot:
        post = await persona_post(fake, bot, "Sage, what next?")
        human = await fake.send_message("just chatting, nobody named")
        await settle(bot)
        await fake.send_reaction(human, "👍")
        await fake.send_reaction(post, "🎉")
        await fake.send_reaction(post, "thumbsup", emoji_id=p.snowflake())  # a custom emoji of that name
        await fake.send_reaction(post, None, emoji_id=p.snowflake())  # a deleted custom emoji: no name
        await fake.send_reaction(post, "👍", user_id=p.BOT_USER_ID)  # the bot's own
        await fake.send_reaction(post, "👍", user_id=CARL)  # the barrier: stored, so those before were read
        await voted(bot, post, [(str(CARL), 1, None)])
        assert await votes.post_of(bot.app.db, f"discord:{human}") is None

        later = await persona_post(fake, bot, "Sage, still with us?")  # the client went on
        assert later != post


async def test_a_thumbs_down_keeps_the_next_message_in_the_posts_thread_as_its_reason(
    fake: FakeDiscord, open_bot
) -> None:
    async with open_bot() as bot:
        post = await persona_post(fake, bot, "Sage, in here please", channel_id=p.THREAD_ID)
        await fake.send_reaction(post, "👎", channel_id=p.THREAD_ID)
        await voted(bot, post, [(str(p.HUMAN_USER_ID), -1, None)])
        await persona_post(fake, bot, "Sage, that misses the point", channel_id=p.THREAD_ID)
        await fake.send_message("and another thing", channel_id=p.THREAD_ID)  # the next one only
        await settle(bot)
        await voted(bot, post, [(str(p.HUMAN_USER_ID), -1, "Sage, that misses the point")])


async def test_usage_shows_each_personas_share_of_thumbs_up(fake: FakeDiscord, open_bot) -> None:
    async with open_bot() as bot:
        post = await persona_post(fake, bot, "Rex, is this risky?")
        await fake.send_reaction(post, "👍")
        await fake.send_reaction(post, "👎", user_id=BEN)
        await fake.send_reaction(post, "👍", user_id=CARL)
        await voted(bot, post, [(str(p.HUMAN_USER_ID), 1, None), (str(BEN), -1, None), (str(CARL), 1, None)])
        asked = await fake.send_slash_command("usage", {}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
    assert "- Rex: 67% 👍 (2 👍, 1 👎)" in followup.json["content"]
