"""The Slack adapter's pure parts, the port on its own, the runner and the manifest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import ConfigError
from bot.slack.client import make_web_client
from bot.slack.inbound import inbound_from_event
from bot.slack.keys import channel_id_of, channel_key
from bot.slack.port import SlackPort, persona_identity
from bot.slack.runner import run_slack
from bot.slack.text import CHUNK_CHARS, escape_for_slack, split_for_slack
from personas import load_personas
from tests.conftest import REPO
from tests.fakes.slack_api import FakeSlackApi

PERSONAS = load_personas(REPO / "personas")


def body(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "channel": "C1", "user": "U1", "text": "hello", "ts": "1.000100"}
    return {"team_id": "T1", "event_id": "Ev1", "event": {**base, **event}}


# -- text ------------------------------------------------------------------------------------------


def test_escape_leaves_no_control_sequence() -> None:
    assert escape_for_slack("a <!here> & <@U1> > b") == "a &lt;!here&gt; &amp; &lt;@U1&gt; &gt; b"
    assert escape_for_slack("hey @channel and @Everyone, mail@here.com") == (
        "hey @\u200bchannel and @\u200bEveryone, mail@\u200bhere.com"
    )


def test_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    paragraph = "word " * 500  # 2,500 characters
    pieces = split_for_slack(f"{paragraph}\n\n{paragraph}")
    assert [len(p) for p in pieces] == [len(paragraph.strip())] * 2

    no_breaks = "x" * (CHUNK_CHARS * 2 + 10)
    assert [len(p) for p in split_for_slack(no_breaks)] == [CHUNK_CHARS, CHUNK_CHARS, 10]
    assert split_for_slack("  \n ") == []
    assert split_for_slack("short") == ["short"]


def test_split_keeps_every_word() -> None:
    text = "\n".join(f"line {n} " + "y" * (n % 90) for n in range(800))
    pieces = split_for_slack(text)
    assert all(len(p) <= CHUNK_CHARS for p in pieces) and len(pieces) > 1
    assert "".join(pieces).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")


# -- inbound ---------------------------------------------------------------------------------------


def test_channel_message_becomes_inbound() -> None:
    inbound = inbound_from_event(body(text="Sage &amp; Nova: a &lt; b", thread_ts="0.5"), "UBOT")
    assert inbound is not None
    assert (inbound.channel_key, inbound.author_id, inbound.thread) == ("slack:T1:C1", "U1", "0.5")
    assert inbound.text == "Sage & Nova: a < b"
    assert inbound.event_id == "slack:T1:C1:1.000100"


@pytest.mark.parametrize("subtype", ["thread_broadcast", "file_share"])
def test_human_subtypes_are_taken(subtype: str) -> None:
    assert inbound_from_event(body(subtype=subtype), "UBOT") is not None


@pytest.mark.parametrize(
    "event",
    [
        {"bot_id": "B1"},
        {"subtype": "bot_message"},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "channel_join"},
        {"user": "UBOT"},
        {"user": None},
        {"text": "<@UBOT>"},
        {"type": "reaction_added"},
    ],
)
def test_not_answered(event: dict[str, Any]) -> None:
    assert inbound_from_event(body(**event), "UBOT") is None


def test_bot_mention_is_stripped_other_mentions_kept() -> None:
    inbound = inbound_from_event(body(type="app_mention", text="<@UBOT|roundtable>  Sage, ask <@U2>"), "UBOT")
    assert inbound is not None and inbound.text == "Sage, ask <@U2>"


def test_channel_keys_round_trip() -> None:
    assert channel_id_of(channel_key("T1", "C9")) == "C9"
    assert channel_id_of("discord:123") is None and channel_id_of("slack:T1") is None


# -- port ------------------------------------------------------------------------------------------


def test_persona_identity() -> None:
    assert persona_identity(PERSONAS["sage"]) == {"username": "Sage", "icon_emoji": ":owl:"}
    assert persona_identity(PERSONAS["rex"]) == {"username": "Rex", "icon_emoji": ":t-rex:"}
    assert persona_identity(PERSONAS["pixel"]) == {"username": "Pixel"}
    assert persona_identity(PERSONAS["nova"])["icon_url"].startswith("https://")


async def test_long_reply_is_posted_in_pieces_in_the_same_thread() -> None:
    async with FakeSlackApi() as fake:
        port = SlackPort(make_web_client("xoxb-unit", fake.api_url))
        await port.post("slack:T1:C1", PERSONAS["sage"], "\n".join(["z" * 1000] * 7), "9.9")
        await port.notice("slack:T1:C1", "Scene set: <!here>", None)
        await port.trace("slack:T1:C1", "[moderator] dropped")

    posts = fake.delivered_posts()
    assert [len(p["text"]) for p in posts[:-1]] == [2001, 2001, 2001, 1000]
    assert {(p["thread_ts"], p["username"]) for p in posts[:-1]} == {("9.9", "Sage")}
    assert posts[-1] == {"channel": "C1", "text": "Scene set: &lt;!here&gt;", "unfurl_links": False, "username": "Roundtable"}


# -- runner ----------------------------------------------------------------------------------------


async def test_runner_needs_a_token_and_a_way_in(make_config) -> None:
    config = make_config()
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        await run_slack(config, {})
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        await run_slack(config, {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": ""})


async def test_runner_serves_socket_mode_until_cancelled(make_config) -> None:
    async with FakeSlackApi() as fake:
        config = make_config({"slack": {"api_base_url": fake.api_url}})
        running = asyncio.create_task(run_slack(config, {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}))
        await fake.wait_until(lambda: fake.socket_connections == 1)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        await fake.wait_until(lambda: fake.socket_closes == 1)


# -- manifest --------------------------------------------------------------------------------------


def test_manifest() -> None:
    manifest = yaml.safe_load(Path(REPO / "manifest.yml").read_text(encoding="utf-8"))
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(
        ["chat:write", "chat:write.customize", "app_mentions:read", "channels:history", "groups:history",
         "im:history", "commands", "users:read"]
    )
    settings = manifest["settings"]
    assert sorted(settings["event_subscriptions"]["bot_events"]) == sorted(
        ["message.channels", "message.groups", "message.im", "app_mention"]
    )
    commands = {c["command"]: c["url"] for c in manifest["features"]["slash_commands"]}
    assert set(commands) == {"/moderate", "/persona", "/approvals", "/trust"}
    urls = {*commands.values(), settings["event_subscriptions"]["request_url"], settings["interactivity"]["request_url"]}
    assert urls == {"https://example.com/slack/events"}
    assert settings["interactivity"]["is_enabled"] is True and settings["socket_mode_enabled"] is False
