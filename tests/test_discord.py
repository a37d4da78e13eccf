"""The real discord.py client, wired to the app, against the fake Discord in tests/fakes/discord_server.py.

Nothing here calls our handlers directly: tests push gateway events into the fake and read the
REST calls the bot made. Waiting polls the fake's record with a timeout; there are no fixed sleeps.
"""

from __future__ import annotations

import copy
import itertools
import json
import zlib
from typing import Any

import aiohttp
import pytest
import zstandard
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bot.discord_bot.client import INVITE_PERMISSIONS, invite_url
from bot.discord_bot.delivery import NO_WEBHOOKS_NOTICE, split_message, webhook_username
from graph.models.base import Models
from graph.models.chat import ChatModels
from personas import load_personas
from storage import approvals, channels, history
from storage.records import ApprovalMode, ApprovalStatus
from tests.conftest import REPO
from tests.discord_harness import settle
from tests.fake_models import FakeModels
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord, RecordedCall
from tests.recording_port import RecordingPort

TEXT = p.TEXT_CHANNEL_ID
THREAD = p.THREAD_ID
CHANNEL_MESSAGES = rf"/channels/{TEXT}/messages"
PERSONAS = load_personas(REPO / "personas")
TWEMOJI = "https://cdn.jsdelivr.net/gh/jdecked/twemoji@latest/assets/72x72/"  # config.toml's [discord] twemoji_base_url


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
    assert {c["name"] for c in fake.commands} == {
        "moderate",
        "stop",
        "next",
        "persona",
        "approvals",
        "trust",
        "task",
        "mailbox",
        "outbox",
        "roundtable",
        "scene",  # issue 23: /scene on Discord, declared in the registry
        "usage",  # issue 24: /usage, declared in the registry
        "tools",  # issue 22: the MCP servers and the tools the personas here may use
        "memory",  # issue 36: a persona's summary and notes here
    }
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
    assert execute.json["avatar_url"] == f"{TWEMOJI}1f989.png"  # Sage's avatar is ":owl:", 🦉
    assert fake.find_calls("POST", rf"/channels/{TEXT}/webhooks"), "the thread posts through its parent's webhook"
    assert [(line.author_name, line.text) for line in lines][0] == ("Ana", "Sage, what next?")


async def test_an_emoji_avatar_is_a_twemoji_image(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections={"bot": {"participants": ["pixel"]}}):
        await fake.send_message("Pixel, paint us a picture")
        [execute] = await fake.wait_for_webhook_executes()
    assert execute.json["username"] == "Pixel"
    assert execute.json["avatar_url"] == f"{TWEMOJI}1f3a8.png"  # Pixel's avatar is "🎨"


async def test_the_twemoji_base_url_is_configurable(fake: FakeDiscord, open_bot) -> None:
    only_pixel = {"bot": {"participants": ["pixel"]}}
    async with open_bot({"twemoji_base_url": "https://emoji.example/png"}, sections=only_pixel):
        await fake.send_message("Pixel, paint us a picture")
        [execute] = await fake.wait_for_webhook_executes()
    assert execute.json["avatar_url"] == "https://emoji.example/png/1f3a8.png"

    async with open_bot({"twemoji_base_url": ""}, sections=only_pixel):
        await fake.send_message("Pixel, once more")
        [_, execute] = await fake.wait_for_webhook_executes(2)
    assert execute.json["username"] == "Pixel" and "avatar_url" not in execute.json


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
    # /moderate on and off are open to everyone by default; [permissions] closes off to channel managers.
    closed = {"permissions": {"moderate_off": ["manager"]}}
    async with open_bot({"manager_role": str(p.MANAGER_ROLE_ID)}, sections=closed) as bot:
        on = await fake.send_slash_command("moderate", {"mode": "on", "max_turns": 3})
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{on}")
        [callback] = fake.find_calls("POST", rf"/interactions/{on}/[^/]+/callback")
        assert callback.json == {"type": 5, "data": {"flags": 64}}  # deferred, ephemeral
        assert followup.json["flags"] == 64 and "Moderation is on" in followup.json["content"]
        channel = await channels.get_channel(bot.app.db, key)
        assert channel is not None and channel.moderated and channel.max_turns == 3
        [announcement] = await fake.wait_for_calls("POST", CHANNEL_MESSAGES)  # the outbox posts it after the answer
        assert "Moderation is on" in announcement.json["content"]
        assert announcement.json["allowed_mentions"]["parse"] == []

        status = await fake.send_slash_command("moderate", {"mode": "status"}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{status}")
        assert "up to 3 turns" in followup.json["content"] and followup.json["flags"] == 64

        refused = await fake.send_slash_command("moderate", {"mode": "off"}, permissions=p.MEMBER_PERMISSIONS)
        [callback] = await fake.wait_for_calls("POST", rf"/interactions/{refused}/[^/]+/callback")
        assert callback.json["type"] == 4 and callback.json["data"]["flags"] == 64
        assert "needs Manage Channels or the manager role" in callback.json["data"]["content"]
        assert (await channels.get_channel(bot.app.db, key)).moderated  # type: ignore[union-attr]

        off = await fake.send_slash_command(
            "moderate", {"mode": "off"}, permissions=p.MEMBER_PERMISSIONS, roles=[p.MANAGER_ROLE_ID]
        )
        await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{off}")
        assert not (await channels.get_channel(bot.app.db, key)).moderated  # type: ignore[union-attr]
        # on and off, nothing for status: the outbox posts a conversation's messages in order
        assert len(await fake.wait_for_calls("POST", CHANNEL_MESSAGES, 2)) == 2


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


# -- approvals: buttons on a request message, decided by a click ---------------------------------

APPROVERS = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}}}
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
NOT_AN_APPROVER = p.user(p.OWNER_USER_ID, "Owner")


async def approval_request(fake: FakeDiscord) -> tuple[int, int]:
    """(message id, approval id) of the request with buttons the bot posted in #general."""
    await fake.wait_for_calls("POST", CHANNEL_MESSAGES, where=lambda c: bool(c.json.get("components")))
    [(message_id, message)] = [(i, m) for i, m in fake.messages.items() if m["components"]]
    return message_id, int(button_ids(message)[0].split(":")[1])


def button_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message["components"] for c in row["components"]]


async def edits_of(fake: FakeDiscord, message_id: int, showing: str) -> list[RecordedCall]:
    return await fake.wait_for_calls(
        "PATCH", rf"/channels/{TEXT}/messages/{message_id}", where=lambda c: showing in c.json.get("content", "")
    )


async def callback_of(fake: FakeDiscord, interaction_id: int) -> dict[str, Any]:
    [callback] = await fake.wait_for_calls("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    return callback.json


async def followup_of(fake: FakeDiscord, interaction_id: int) -> dict[str, Any]:
    [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{interaction_id}")
    return followup.json


def news_posts(fake: FakeDiscord) -> list[RecordedCall]:
    news = {str(i) for i, w in fake.webhooks.items() if w["channel_id"] == str(p.NEWS_CHANNEL_ID)}
    return [c for c in fake.webhook_executes() if c.path.split("/")[2] in news]


async def test_an_approval_request_has_buttons_and_only_an_approver_decides_it_once(
    fake: FakeDiscord, open_bot
) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        original = copy.deepcopy(fake.messages[message_id])
        assert button_ids(original) == [
            f"approval:{approval_id}:{verb}" for verb in ("approve", "reject", "feedback", "view", "revise")
        ]
        [posted] = fake.find_calls("POST", CHANNEL_MESSAGES, lambda c: bool(c.json.get("components")))
        assert posted.json["allowed_mentions"]["parse"] == []
        pending = await approvals.get(bot.app.db, approval_id)
        assert pending is not None and pending.status is ApprovalStatus.PENDING
        expires = int(pending.expires_at)
        assert original["content"].splitlines() == [
            f"**Approval #{approval_id}**: Nova wants to run `publish_post`",
            "risk high",  # publish_post is sensitive: at least high
            "> channel: news",
            "> text: We launched!",
            f"Expires <t:{expires}:t> (<t:{expires}:R>). Approvers: use the buttons below.",
        ]

        refused = await fake.click_button(message_id, f"approval:{approval_id}:approve", clicker=NOT_AN_APPROVER)
        assert (await callback_of(fake, refused))["type"] == 6  # deferred at once: who may decide is in storage
        answer = await followup_of(fake, refused)
        assert answer["flags"] == 64
        assert answer["content"] == f"Only approvers can decide; #{approval_id} stays pending."
        still = await approvals.get(bot.app.db, approval_id)
        assert still is not None and still.status is ApprovalStatus.PENDING

        approved = await fake.click_button(message_id, f"approval:{approval_id}:approve")
        assert (await callback_of(fake, approved))["type"] == 6  # deferred: the request message is edited instead
        [final] = await edits_of(fake, message_id, "executed")
        await settle(bot)

        # Clicked again, as a Discord that still shows the buttons would: nothing runs twice.
        edits = len(fake.find_calls("PATCH", rf"/channels/{TEXT}/messages/{message_id}"))
        again = await fake.click_button(message_id, f"approval:{approval_id}:approve", as_seen=original)
        assert (await callback_of(fake, again))["type"] == 6
        answer = await followup_of(fake, again)
        # A button naming an approval that does not exist is answered, and breaks nothing.
        forged = json.loads(json.dumps(original).replace(f"approval:{approval_id}:", "approval:987654:"))
        unknown = await fake.click_button(message_id, "approval:987654:reject", as_seen=forged)
        assert (await followup_of(fake, unknown))["content"] == "There is no approval #987654."
        await settle(bot)

    assert answer["flags"] == 64
    assert answer["content"] == f"Approval #{approval_id} was already decided (executed)."
    assert len(fake.find_calls("PATCH", rf"/channels/{TEXT}/messages/{message_id}")) == edits
    [published] = news_posts(fake)
    assert published.json["username"] == "Nova" and published.json["content"] == "We launched!"
    assert final.json["components"] == []
    assert final.json["content"].splitlines()[-1] == (
        f"\N{WHITE HEAVY CHECK MARK} Approved by <@{p.HUMAN_USER_ID}>, executed: posted in #news"
    )
    assert final.json["allowed_mentions"]["parse"] == []
    assert fake.messages[message_id]["content"] == final.json["content"]


async def test_buttons_posted_before_a_restart_work_after_it(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        await settle(bot)

    async with open_bot(sections=APPROVERS) as bot:  # a new client and app on the same data directory
        await fake.click_button(message_id, f"approval:{approval_id}:approve")
        [final] = await edits_of(fake, message_id, "executed")
        await settle(bot)
        done = await approvals.get(bot.app.db, approval_id)

    assert done is not None and done.status is ApprovalStatus.EXECUTED
    assert len(news_posts(fake)) == 1
    assert f"Approved by <@{p.HUMAN_USER_ID}>, executed: posted in #news" in final.json["content"]


async def test_reject_with_feedback_opens_a_form_and_its_text_reaches_the_approval(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        clicked = await fake.click_button(message_id, f"approval:{approval_id}:feedback")
        form = await callback_of(fake, clicked)
        assert form["type"] == 9  # MODAL
        [label] = form["data"]["components"]
        field = label["component"]
        assert label["type"] == 18 and field["type"] == 4 and field["required"]

        feedback = {field["custom_id"]: "Too salesy. Say what changed."}
        submitted = await fake.submit_form(form["data"]["custom_id"], feedback)
        assert (await callback_of(fake, submitted))["type"] == 6
        [final] = await edits_of(fake, message_id, "Rejected")
        await settle(bot)
        rejected = await approvals.get(bot.app.db, approval_id)

    assert rejected is not None and rejected.status is ApprovalStatus.REJECTED
    assert rejected.comment == "Too salesy. Say what changed."
    assert final.json["content"].splitlines()[-1] == (
        f"\N{CROSS MARK} Rejected by <@{p.HUMAN_USER_ID}>: Too salesy. Say what changed."
    )
    assert final.json["components"] == []
    assert news_posts(fake) == []


async def test_an_expired_request_says_so_and_loses_its_buttons(fake: FakeDiscord, open_bot) -> None:
    sections = {"approvals": {**APPROVERS["approvals"], "timeout_minutes": 0.01}}  # 0.6 seconds
    async with open_bot(sections=sections) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        [final] = await edits_of(fake, message_id, "Expired")
        await settle(bot)

    assert final.json["components"] == []
    assert news_posts(fake) == []


async def test_approvals_lists_pending_requests_with_links_and_trust_answers(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        await settle(bot)
        listed = await fake.send_slash_command("approvals", {}, permissions=p.MEMBER_PERMISSIONS)
        [listing] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{listed}")
        refused = await fake.send_slash_command("approvals", {"mode": "on-the-loop"}, permissions=p.MEMBER_PERMISSIONS)
        refusal = await callback_of(fake, refused)
        changed = await fake.send_slash_command("approvals", {"mode": "in-command"})
        await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{changed}")
        trusted = await fake.send_slash_command("trust", {}, permissions=p.MEMBER_PERMISSIONS)
        [trust] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{trusted}")
        channel = await channels.get_channel(bot.app.db, f"discord:{TEXT}")

    assert listing.json["flags"] == 64
    assert f"#{approval_id} Nova wants publish\\_post(channel='news', text='We launched!')" in listing.json["content"]
    assert f"https://discord.com/channels/{p.GUILD_ID}/{TEXT}/{message_id}" in listing.json["content"]
    assert refusal["data"]["flags"] == 64 and "needs Manage Channels" in refusal["data"]["content"]
    assert channel is not None and channel.approval_mode is ApprovalMode.IN_COMMAND
    assert trust.json["flags"] == 64 and trust.json["content"].startswith("Trust levels:")
    assert (
        "Nova: new (0 decided by people, 0% approved, 0 finished tasks, 0 failed, 0 days) — 50 more decided "
        "requests, 5 more finished tasks and 7 more days to reach proficient"
    ) in trust.json["content"].splitlines()


async def test_with_surface_slack_the_request_is_forwarded_and_the_channel_told(fake: FakeDiscord, open_bot) -> None:
    slack = RecordingPort()  # stands in for the Slack port here; tests/test_one_process.py runs the real one

    async with open_bot(sections={"approvals": {"surface": "slack"}}, approvals_elsewhere=slack) as bot:
        await fake.send_message(PUBLISH)
        [told] = await fake.wait_for_calls("POST", CHANNEL_MESSAGES, where=lambda c: "Slack" in c.json["content"])
        await settle(bot)
        [pending] = await approvals.pending(bot.app.db)

    assert [(a.id, a.persona_id) for a in slack.approvals_shown] == [(pending.id, "nova")]
    assert told.json["content"] == f"Approval #{pending.id} was sent to Slack for review."
    assert not [m for m in fake.messages.values() if m["components"]]


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
        bind_persona=lambda model, persona, others, addressed, tools: model,  # this fake calls no tools
    )


async def test_a_2500_character_reply_arrives_as_two_messages(fake: FakeDiscord, open_bot) -> None:
    long_reply = "\n".join(f"{n:02d} here is one more thought about our plan".ljust(60, ".") for n in range(41))
    assert len(long_reply) == 2500
    # 41 sentences: more than a chat line's default 3 ([review] max_sentences), all of them wanted here.
    async with open_bot(models=_models_replying(long_reply), sections={"review": {"max_sentences": 50}}) as bot:
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
    assert [content for _, _, content in fake.posts] == contents  # each one shown (none answered by another's nonce)
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


async def test_steering_commands_and_silent_reasons(fake: FakeDiscord, open_bot) -> None:
    async with open_bot() as bot:
        nope = await fake.send_slash_command("next", {"persona": "zorg"})
        [answer] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{nope}")
        reasons = await fake.send_slash_command("moderate", {"mode": "reasons", "setting": "on"})
        moderate = await fake.send_slash_command("moderate", {"mode": "on"})
        for command in (reasons, moderate):  # both are stored before the message arrives
            await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{command}")
        await fake.send_message("Let's plan the launch.")
        reason, *_ = await fake.wait_for_calls(
            "POST", CHANNEL_MESSAGES, where=lambda c: "[moderator] next:" in c.json["content"]
        )
        await settle(bot)

    assert (
        answer.json["flags"] == 64
        and answer.json["content"] == "'zorg' is not in this channel; choose one of Nova, Sage, Rex."
    )
    assert reason.json["flags"] & 4096  # suppressed from notifications
    assert reason.json["content"].startswith("-# [moderator] next: Nova")


async def test_the_typing_indicator_runs_while_a_persona_writes(fake: FakeDiscord, open_bot) -> None:
    typing_path = rf"/channels/{TEXT}/typing"
    typed_during_the_call: list[bool] = []

    async def reply(speaker: str, messages: list[Any]) -> str:
        await fake.wait_for_calls("POST", typing_path)  # typing started before the model answered
        typed_during_the_call.append(not fake.webhook_executes())
        return "Sage thinks this through, slowly and with care."

    async with open_bot(models=FakeModels(reply)) as bot:
        await fake.send_message("Sage, what do you think?")
        await fake.wait_for_webhook_executes(1)
        await settle(bot)
    assert typed_during_the_call == [True]
