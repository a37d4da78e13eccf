"""Webhook usernames Discord accepts, made the way PluralKit makes them.

Discord refuses a webhook username that contains "clyde" or "discord" (any case), that is exactly
"everyone" or "here", that contains ``` , or that is longer than 80 characters. PluralKit keeps
the name readable by slipping a hair space (U+200A) inside the refused word, pads a one-character
name with an invisible U+17B5, and truncates to 80.
"""

from __future__ import annotations

import re

MAX_USERNAME = 80
_HAIR_SPACE = "\u200a"
_INVISIBLE_PAD = "\u17b5"
_REFUSED = (
    re.compile(r"(c)(lyde)", re.IGNORECASE),
    re.compile(r"(d)(iscord)", re.IGNORECASE),
    re.compile(r"^(e)(veryone)$", re.IGNORECASE),
    re.compile(r"^(h)(ere)$", re.IGNORECASE),
    re.compile(r"(`)(``)"),
)


def webhook_username(display_name: str) -> str:
    name = display_name.strip()
    for pattern in _REFUSED:
        name = pattern.sub(lambda m: m.group(1) + _HAIR_SPACE + m.group(2), name)
    if len(name) == 1:
        name += _INVISIBLE_PAD
    return name[:MAX_USERNAME]
