"""Outgoing text for Slack: escaped so it can never ping anyone, split into readable messages.

Slack cuts a message at 40,000 characters and reads poorly well before that, so text is split
into pieces of at most CHUNK_CHARS (3,000), preferring paragraph breaks, then line breaks, then
spaces. Splitting happens before escaping: escaping grows a piece at most fivefold ("&" -> "&amp;"),
so an escaped piece stays under 15,000 characters, far below the hard limit.
"""

from __future__ import annotations

import re

SLACK_HARD_LIMIT = 40_000
CHUNK_CHARS = 3_000
_ESCAPE_GROWTH = len("&amp;")
assert CHUNK_CHARS * _ESCAPE_GROWTH < SLACK_HARD_LIMIT

_BREAKS = ("\n\n", "\n", " ")
_BARE_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)
ZERO_WIDTH_SPACE = "\u200b"


def escape_for_slack(text: str) -> str:
    """Plain text that Slack shows literally.

    Escaping "<" removes every control sequence (<!channel>, <!here>, <!subteam^…>, <@U…>); the
    zero-width space keeps a bare @channel from being read as one where Slack links names.
    """
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BARE_BROADCAST.sub(lambda m: "@" + ZERO_WIDTH_SPACE + m.group(1), escaped)


def unescape_from_slack(text: str) -> str:
    """Slack escapes exactly &, < and > in message text; undo it so the models read plain text."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def split_for_slack(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Non-empty pieces of at most `limit` characters, cut at the most natural break available."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut, skip = limit, 0
        for separator in _BREAKS:
            at = rest.rfind(separator, 0, limit + 1)
            if at > 0:
                cut, skip = at, len(separator)
                break
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut + skip :].lstrip("\n")
    if rest:
        pieces.append(rest)
    return [piece for piece in pieces if piece]


def slack_messages(text: str) -> list[str]:
    """What to send for one logical message: split, then escaped."""
    return [escape_for_slack(piece) for piece in split_for_slack(text)]


def escape_clipped(text: str, limit: int) -> str:
    """Escaped text of at most `limit` characters; a longer text is cut before escaping (so no
    "&amp;" is split), as late as fits, and ends in an ellipsis."""
    escaped = escape_for_slack(text)
    if len(escaped) <= limit:
        return escaped
    best, low, high = "…", 0, min(len(text), limit)  # escaping never shrinks text, so keep <= limit
    while low <= high:
        keep = (low + high) // 2
        clipped = escape_for_slack(text[:keep].rstrip()) + "…"
        if len(clipped) <= limit:
            best, low = clipped, keep + 1
        else:
            high = keep - 1
    return best
