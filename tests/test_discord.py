"""The real discord.py client, wired to the app, against the fake Discord in tests/fakes/discord_server.py.

Nothing here calls our handlers directly: tests push gateway events into the fake and read the
REST calls the bot made. Waiting polls the fake's record with a timeout; there are no fixed sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
import zstandard
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bot.config import Config
from bot.discord_bot.chunks import split_message
from bot.discord_bot.delivery import NO_WEBHOOKS_NOTICE
from bot.discord_bot.invite import INVITE_PERMISSIONS, invite_url
from bot.discord_bot.names import webhook_username
from bot.discord_bot.runner import DiscordBot, discord_bot
from graph.models.base import Models
from graph.models.chat import ChatModels
from personas import load_personas
from storage import channels, history
from storage.records import ApprovalMode
from tests.conftest import REPO
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord, RecordedCall

TEXT = p.TEXT_CHANNEL_ID
THREAD = p.THREAD_ID
CHANNEL_MESSAGES = rf"/channels/{TEXT}/messages"
PERSONAS = load_personas(REPO / "personas")


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


@pytest.fixture
def open_bot(make_config: Callable[..., Config], fake: FakeDiscord) -> Callable[..., Any]:
    """`async with open_bot(...) as bot:` runs the whole Discord bot against the fake, connected."""

    def opener(discord_settings: dict[str, Any] | None = None, *, models: Models | None = None) -> Any:
        config = make_config(
            {"discord": {"api_base_url": fake.api_url, "gateway_url": fake.gateway_url, **(discord_settings or {})}}
        )
        return _connected(discord_bot(config, {"DISCORD_TOKEN": fake.token}, models=models, rng=random.Random(7)), fake)

    return opener


@asynccontextmanager
async def _connected(bot_context: Any, fake: FakeDiscord) -> AsyncIterator[DiscordBot]:
    async with bot_context as bot:
        guild_sent = asyncio.ensure_future(fake.wait_until_guild_sent())
        await asyncio.wait({guild_sent, bot.connection}, return_when=asyncio.FIRST_COMPLETED)
        if not guild_sent.done():
            guild_sent.cancel()
            raise AssertionError(f"the client stopped before it connected: {bot.connection.exception()!r}")
        guild_sent.result()
        yield bot


async def settle(bot: DiscordBot) -> None:
    """Until every queued round has run; bounded, so a bot talking to itself fails instead of hanging."""
    await asyncio.wait_for(bot.app.service.wait_idle(), 10)


def usernames(calls: list[RecordedCall]) -> list[str]:
    return [c.json["username"] for c in calls]


async def test_a_message_gets_a_persona_reply_through_the_channel_webhook(fake: FakeDiscord, open_bot) -> None:
    async with open_bot():
        await fake.send_message("Nova, how should we launch?")
        [execute] = await fake.wait_for_webhook_executes()

    assert execute.json["username"] == "Nova"
    assert execute.json["avatar_url"] == PERSONAS["nova"].avatar
    assert execute.json["content"].startswith(PERSONAS["nova"].catchphrase)
    assert "how should we launch" in execute.json["content"]
    assert execute.query.get("wait") in ("1", "true") and "thread_id" not in execute.query
    [created] = fake.find_calls("POST", rf"/channels/{TEXT}/webhooks")
    assert created.json["name"] == "Roundtable"
    # What the client asked of Discord on the way in:
    assert {c["name"] for c in fake.commands} == {"moderate", "persona"}
    assert fake.gateway_queries[0]["v"] == "10" and fake.gateway_queries[0]["encoding"] == "json"
    assert fake.identify_payloads[0]["intents"] & (1 << 15), "message content intent"


async def test_a_thread_message_is_answered_in_the_thread_and_the_bot_mention_is_dropped(
    fake: FakeDiscord, open_bot
) -> None:
    async with open_bot() as bot:
        await fake.send_message(f"<@{p.BOT_USER_ID}> Sage, what next?", channel_id=THREAD, mentions=[p.bot_user()])
        [execute] = await fake.wait_for_webhook_executes()
        await settle(bot)
        lines = await history.recent_channel_lines(bot.app.db, f"discord:{THREAD}", limit=10)

    assert execute.query["thread_id"] == str(THREAD)
    assert execute.json["username"] == "Sage"
    assert "avatar_url" not in execute.json  # Sage's avatar is an emoji, not an image URL
    assert fake.find_calls("POST", rf"/channels/{TEXT}/webhooks"), "the thread posts through its parent's webhook"
    assert [(line.author_name, line.text) for line in lines][0] == ("Ana", "Sage, what next?")


async def test_bot_and_webhook_messages_are_ignored(fake: FakeDiscord, open_bot) -> None:
    other_bot = p.user(p.snowflake(), "OtherBot", bot=True)
    async with open_bot() as bot:
        await fake.send_message("Nova, Sage, Rex: a bot speaking", author=other_bot)
        await fake.send_message("Nova, Sage, Rex: a webhook speaking", author=other_bot, webhook_id=p.snowflake())
        await fake.send_message("Rex, your turn")
        await fake.wait_for_webhook_executes()
        # Rex's post came back as a webhook MESSAGE_CREATE (as on Discord); it must not start a round either.
        await fake.send_message("Nova, your turn")
        await fake.wait_for_webhook_executes(2)
        await settle(bot)

    assert usernames(fake.webhook_executes()) == ["Rex", "Nova"]


async def test_a_post_discord_refuses_is_logged_and_the_bot_carries_on(fake: FakeDiscord, open_bot) -> None:
    gone = p.snowflake()  # a channel Discord no longer knows: GET /channels/{gone} answers 404
    async with open_bot():
        await fake.send_message("Nova, are you still there?", channel_id=gone)
        await fake.wait_for_calls("GET", rf"/channels/{gone}")
        await fake.send_message("Nova, and here?")
        [execute] = await fake.wait_for_webhook_executes()

    assert execute.json["username"] == "Nova" and "and here" in execute.json["content"]


async def test_moderate_slash_command_changes_the_channel_and_answers_ephemerally(fake: FakeDiscord, open_bot) -> None:
    key = f"discord:{TEXT}"
    async with open_bot({"manager_role": p.MANAGER_ROLE_NAME}) as bot:
        on = await fake.send_slash_command("moderate", {"mode": "on", "max_turns": 3})
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{on}")
        [callback] = fake.find_calls("POST", rf"/interactions/{on}/[^/]+/callback")
        assert callback.json == {"type": 5, "data": {"flags": 64}}  # deferred, ephemeral
        assert followup.json["flags"] == 64 and "Moderation is on" in followup.json["content"]
        channel = await channels.get_channel(bot.app.db, key)
        assert channel is not None and channel.moderated and channel.max_turns == 3
        [announcement] = fake.find_calls("POST", CHANNEL_MESSAGES)
        assert "Moderation is on" in announcement.json["content"]
        assert announcement.json["allowed_mentions"]["parse"] == []

        status = await fake.send_slash_command("moderate", {"mode": "status"}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{status}")
        assert "up to 3 turns" in followup.json["content"] and followup.json["flags"] == 64

        refused = await fake.send_slash_command("moderate", {"mode": "off"}, permissions=p.MEMBER_PERMISSIONS)
        [callback] = await fake.wait_for_calls("POST", rf"/interactions/{refused}/[^/]+/callback")
        assert callback.json["type"] == 4 and callback.json["data"]["flags"] == 64
        assert "needs Manage Channels or the Table Manager role" in callback.json["data"]["content"]
        assert (await channels.get_channel(bot.app.db, key)).moderated  # type: ignore[union-attr]

        off = await fake.send_slash_command(
            "moderate", {"mode": "off"}, permissions=p.MEMBER_PERMISSIONS, roles=[p.MANAGER_ROLE_ID]
        )
        await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{off}")
        assert not (await channels.get_channel(bot.app.db, key)).moderated  # type: ignore[union-attr]
        assert len(fake.find_calls("POST", CHANNEL_MESSAGES)) == 2  # announced on and off, nothing for status


async def test_persona_slash_command_invites_and_typed_commands_are_refused(fake: FakeDiscord, open_bot) -> None:
    key = f"discord:{TEXT}"
    async with open_bot() as bot:
        invite = await fake.send_slash_command("persona", {"action": "invite", "persona_id": "pixel"})
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{invite}")
        assert followup.json["content"] == "Pixel joined." and followup.json["flags"] == 64
        assert "pixel" in await channels.participants(bot.app.db, key)

        await fake.send_message("/dismiss pixel")
        [_, refusal] = await fake.wait_for_calls("POST", CHANNEL_MESSAGES, 2)
        assert "slash commands" in refusal.json["content"]
        assert "pixel" in await channels.participants(bot.app.db, key)


async def test_everyone_in_persona_output_pings_nobody(fake: FakeDiscord, open_bot) -> None:
    async with open_bot():
        await fake.send_message("Nova, say hi to @everyone and @here")
        [execute] = await fake.wait_for_webhook_executes()

    assert "@everyone" in execute.json["content"]
    assert execute.json["allowed_mentions"]["parse"] == []
    assert not execute.json["allowed_mentions"].get("users") and not execute.json["allowed_mentions"].get("roles")


async def test_a_sensitive_action_asks_for_approval_in_the_channel(fake: FakeDiscord, open_bot) -> None:
    async with open_bot() as bot:
        await fake.send_message('Nova, !!act publish_post {"channel": "#news", "text": "Launch day!"}')
        await fake.wait_for_calls("POST", CHANNEL_MESSAGES, where=lambda c: "Approval #" in c.json["content"])
        await settle(bot)

    [request] = fake.find_calls("POST", CHANNEL_MESSAGES, lambda c: "Approval #" in c.json["content"])
    assert "Nova wants publish_post(channel='#news', text='Launch day!')" in request.json["content"]
    assert request.json["allowed_mentions"]["parse"] == []
    assert not fake.find_calls("POST", rf"/channels/{p.NEWS_CHANNEL_ID}/webhooks"), "nothing published yet"


async def test_an_action_run_at_once_posts_as_the_persona_in_the_named_channel(fake: FakeDiscord, open_bot) -> None:
    key = f"discord:{TEXT}"
    async with open_bot() as bot:
        await channels.ensure_channel(bot.app.db, key, participants=["nova", "sage", "rex"], moderated=False)
        await channels.set_approval_mode(bot.app.db, key, ApprovalMode.ON_THE_LOOP)
        await fake.send_message('Nova, !!act publish_post {"channel": "#news", "text": "Launch day!"}')
        await fake.wait_for_calls("POST", CHANNEL_MESSAGES, where=lambda c: "ran publish_post" in c.json["content"])
        await settle(bot)

    [published] = [c for c in fake.webhook_executes() if c.json["content"] == "Launch day!"]
    assert published.json["username"] == "Nova"
    assert published.path.startswith(f"/webhooks/{_created_webhook_id(fake, p.NEWS_CHANNEL_ID)}/")
    [announced] = fake.find_calls("POST", CHANNEL_MESSAGES, lambda c: "ran publish_post" in c.json["content"])
    assert announced.json["content"].endswith("executed: posted in #news")


def _created_webhook_id(fake: FakeDiscord, channel_id: int) -> str:
    return next(w["id"] for w in fake.webhooks.values() if w["channel_id"] == str(channel_id))


def _models_replying(text: str) -> Models:
    model = GenericFakeChatModel(messages=itertools.repeat(AIMessage(content=text)))
    return ChatModels(
        description="fake chat model",
        make=lambda name, limiter: model,
        persona_model_name="fake",
        moderator_model_name="fake",
        requests_per_minute=None,
        bind_moderator=lambda model, schema: model,
    )


async def test_a_2500_character_reply_arrives_as_two_messages(fake: FakeDiscord, open_bot) -> None:
    long_reply = "\n".join(f"{n:02d} here is one more thought about our plan".ljust(60, ".") for n in range(41))
    assert len(long_reply) == 2500
    async with open_bot(models=_models_replying(long_reply)) as bot:
        await fake.send_message("Sage, tell us everything")
        executes = await fake.wait_for_webhook_executes(2)
        await settle(bot)

    assert len(fake.webhook_executes()) == 2
    assert usernames(executes) == ["Sage", "Sage"]
    parts = [c.json["content"] for c in executes]
    assert all(len(part) <= 2000 for part in parts)
    assert "\n".join(parts) == long_reply


async def test_without_manage_webhooks_personas_post_as_the_bot_and_say_so_once(fake: FakeDiscord, open_bot) -> None:
    fake.forbid_webhooks = True
    async with open_bot():
        await fake.send_message("Nova, are you there?")
        await fake.wait_for_calls("POST", CHANNEL_MESSAGES, 2)
        await fake.send_message("Sage, and you?")
        posts = await fake.wait_for_calls("POST", CHANNEL_MESSAGES, 3)

    contents = [c.json["content"] for c in posts]
    assert contents[0] == NO_WEBHOOKS_NOTICE
    assert contents[1].startswith("**Nova:** ") and contents[2].startswith("**Sage:** ")
    assert all(c.json["allowed_mentions"]["parse"] == [] for c in posts)
    assert fake.webhook_executes() == []
    assert len(fake.find_calls("GET", rf"/channels/{TEXT}/webhooks")) == 1  # not asked again after the 403


def test_the_invite_link_asks_for_the_permissions_the_readme_names() -> None:
    assert INVITE_PERMISSIONS.value == 277_562_330_112
    assert invite_url(123) == (
        "https://discord.com/oauth2/authorize?client_id=123&scope=bot+applications.commands&permissions=277562330112"
    )


@pytest.mark.parametrize("compress", [None, "zlib-stream", "zstd-stream"])
async def test_the_fake_gateway_answers_in_the_encoding_asked_for(fake: FakeDiscord, compress: str | None) -> None:
    # discord.py asks for zstd-stream when the zstandard package is installed, else for zlib-stream.
    query = {"v": "10", "encoding": "json", **({"compress": compress} if compress else {})}
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url, params=query) as ws:
        frame = await ws.receive(timeout=5)
    if compress is None:
        assert frame.type == aiohttp.WSMsgType.TEXT
        raw = frame.data
    else:
        decoder = zlib.decompressobj() if compress == "zlib-stream" else zstandard.ZstdDecompressor().decompressobj()
        raw = decoder.decompress(frame.data)
    assert json.loads(raw) == {"op": 10, "d": {"heartbeat_interval": 41_250}}


@pytest.mark.parametrize(
    ("display_name", "username"),
    [
        ("Nova", "Nova"),
        ("Clyde", "C\u200alyde"),
        ("my discord pal", "my d\u200aiscord pal"),
        ("DISCORD CLYDE", "D\u200aISCORD C\u200aLYDE"),
        ("everyone", "e\u200averyone"),
        ("Q", "Q\u17b5"),
        ("x" * 80, "x" * 80),
        ("clyde" + "y" * 76, ("c\u200alyde" + "y" * 76)[:80]),
    ],
)
def test_webhook_usernames_discord_would_refuse_are_made_acceptable(display_name: str, username: str) -> None:
    assert webhook_username(display_name) == username


def test_split_message_cuts_at_line_breaks_then_spaces() -> None:
    assert split_message("short") == ["short"]
    assert split_message("aaaa\nbbbb\ncccc", limit=10) == ["aaaa\nbbbb", "cccc"]
    assert split_message("one two three four", limit=9) == ["one two", "three", "four"]
    assert split_message("x" * 25, limit=10) == ["x" * 10, "x" * 10, "x" * 5]
