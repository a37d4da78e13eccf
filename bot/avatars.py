"""A persona's emoji avatar on each platform: Slack's icon_emoji shortcode, or a Twemoji image for Discord.

A persona file's avatar is an image URL, a `:shortcode:` or a unicode emoji such as "🎨". The
`emoji` package knows the shortcodes; Slack's are its GitHub-style aliases ("🎨" is `:art:`).
"""

from __future__ import annotations

import re

import emoji

SHORTCODE = re.compile(r"^:[a-z0-9_+'-]+:$")
TWEMOJI_BASE_URL = "https://cdn.jsdelivr.net/gh/jdecked/twemoji@latest/assets/72x72/"
_ZWJ, _VS16 = "\u200d", "\ufe0f"


def unicode_emoji(avatar: str) -> str | None:
    """The one emoji an avatar is, itself or what its `:shortcode:` stands for; None for anything else."""
    text = emoji.emojize(avatar, language="alias") if SHORTCODE.match(avatar) else avatar
    return text if emoji.is_emoji(text) else None


def slack_icon_emoji(avatar: str) -> str | None:
    """A `:shortcode:` as written (a workspace's custom emoji too), or a unicode emoji's Slack alias."""
    if SHORTCODE.match(avatar):
        return avatar
    found = unicode_emoji(avatar)
    code = emoji.demojize(found, language="alias") if found else ""
    return code if re.fullmatch(r":[^:\s]+:", code) else None


def twemoji_url(avatar: str, base_url: str = TWEMOJI_BASE_URL) -> str | None:
    """Twemoji's image of an emoji avatar: its code points in lower-case hex joined by "-", without the
    FE0F variation selector unless the emoji is a ZWJ sequence (as Twemoji names its files)."""
    found = unicode_emoji(avatar)
    if found is None or not base_url:
        return None
    points = found if _ZWJ in found else found.replace(_VS16, "")
    return f"{base_url.rstrip('/')}/{'-'.join(f'{ord(c):x}' for c in points)}.png"
