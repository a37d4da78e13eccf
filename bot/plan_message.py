"""The task plan as one chat message: fitted to a platform's length limit, and addressed for later edits.

A plan longer than the platform allows keeps its first line (the header: the task and its progress)
and as many step lines as fit, then says how many lines were left out. The id a port hands back for a
plan message is "<channel>:<message>", so an edit after a restart still knows where the message is.
"""

from __future__ import annotations

from collections.abc import Callable


def _as_is(text: str) -> str:
    return text


def left_out(lines: int) -> str:
    return f"… {lines} more line{'s' if lines != 1 else ''} not shown (the plan is too long for one message)"


def fit_plan(text: str, limit: int, escape: Callable[[str], str] = _as_is) -> str:
    """`text` escaped for the platform, at most `limit` characters. `escape` must work line by line
    and never shrink text (Slack's escaping does both)."""
    lines = [escape(line) for line in text.splitlines()] or [""]
    if sum(len(line) for line in lines) + len(lines) - 1 <= limit:
        return "\n".join(lines)
    shown = len(lines[0])
    kept = 1
    while kept < len(lines) - 1 and shown + 1 + len(lines[kept]) + 1 + len(left_out(len(lines) - kept - 1)) <= limit:
        shown += 1 + len(lines[kept])
        kept += 1
    if len(lines) == 1:
        return _clipped_header(text.splitlines()[0], limit, escape)
    marker = left_out(len(lines) - kept)
    if shown + 1 + len(marker) <= limit:
        return "\n".join([*lines[:kept], marker])
    return _clipped_header(text.splitlines()[0], limit - 1 - len(marker), escape) + "\n" + marker


def _clipped_header(header: str, room: int, escape: Callable[[str], str]) -> str:
    """The start of an overlong header, escaped, ending in "…", within `room` characters."""
    kept = header[: max(room - 1, 0)]
    while kept and len(escape(kept)) + 1 > room:
        kept = kept[: len(kept) - max(1, len(escape(kept)) + 1 - room)]
    return escape(kept.rstrip()) + "…"


def plan_message_id(channel: str | int, message: str | int) -> str:
    return f"{channel}:{message}"


def plan_message_place(message_id: str | None) -> tuple[str, str] | None:
    """(channel, message) of an id made by plan_message_id; None for no id or one this platform did not make."""
    if not message_id:
        return None
    channel, _, message = message_id.rpartition(":")
    return (channel, message) if channel and message else None
