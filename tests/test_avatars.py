"""Emoji avatars as each platform shows them: Slack's icon_emoji shortcode, Discord's Twemoji image URL."""

from __future__ import annotations

import pytest

from bot.avatars import slack_icon_emoji, twemoji_url

BASE = "https://cdn.jsdelivr.net/gh/jdecked/twemoji@latest/assets/72x72/"


@pytest.mark.parametrize(
    ("avatar", "icon"),
    [
        ("🎨", ":art:"),
        ("🦉", ":owl:"),
        ("❤️", ":heart:"),
        (":owl:", ":owl:"),
        (":partyparrot:", ":partyparrot:"),
        ("🎨🎨", None),
        ("N", None),
        ("https://example.com/a.png", None),
    ],
)
def test_slack_icon_emoji(avatar: str, icon: str | None) -> None:
    assert slack_icon_emoji(avatar) == icon


@pytest.mark.parametrize(
    ("avatar", "image"),
    [
        ("🎨", "1f3a8.png"),
        (":owl:", "1f989.png"),  # a shortcode the emoji package knows
        ("❤️", "2764.png"),  # FE0F dropped from a single emoji, as Twemoji names it
        ("#️⃣", "23-20e3.png"),
        ("👍🏽", "1f44d-1f3fd.png"),
        ("🏳️‍🌈", "1f3f3-fe0f-200d-1f308.png"),  # a ZWJ sequence keeps its FE0F
        ("🇫🇷", "1f1eb-1f1f7.png"),
    ],
)
def test_twemoji_url(avatar: str, image: str) -> None:
    assert twemoji_url(avatar, BASE) == BASE + image


@pytest.mark.parametrize("avatar", ["🎨🎨", "N", ":partyparrot:", "https://example.com/a.png"])
def test_no_twemoji_for_what_is_not_one_emoji(avatar: str) -> None:
    assert twemoji_url(avatar, BASE) is None
