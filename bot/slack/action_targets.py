"""Where a persona's publish_post or send_message goes, or delete_post takes a post from, on Slack. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graph.actions import ActionCall

# Slack user ids are upper case (U…, or W… on Enterprise Grid); channel names are always lower case.
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_USER_MENTION = re.compile(r"^<@([UW][A-Z0-9]{2,})(\|[^>]*)?>$")
_CHANNEL_LINK = re.compile(r"^<#([CG][A-Z0-9]{2,})(\|([^>]*))?>$")


class ActionFailed(RuntimeError):
    """Slack did not carry the action out; the message becomes the persona's tool result."""


@dataclass(frozen=True)
class Target:
    channel: str  # what chat.postMessage takes: a channel id or name, or a user id for a direct message
    done: str  # what happened, for the approval message and the persona: "posted in #news"


def is_user_id(text: str) -> bool:
    return bool(_USER_ID.match(text))


def target_of(call: ActionCall) -> Target:
    """Raises ActionFailed for an action Slack does not run or a blank destination."""
    if call.name in ("publish_post", "delete_post"):
        channel = _channel_name(str(call.args.get("channel", "")))
        return Target(channel, f"{'posted in' if call.name == 'publish_post' else 'deleted the post in'} #{channel}")
    if call.name == "send_message":
        to = str(call.args.get("to", "")).strip()
        mention = _USER_MENTION.match(to)
        user = mention.group(1) if mention else to.lstrip("@")
        if is_user_id(user):
            return Target(user, f"sent to {user} as a direct message")
        channel = _channel_name(to)
        return Target(channel, f"sent in #{channel}")
    raise ActionFailed(f"Slack cannot run {call.name}")


def _channel_name(text: str) -> str:
    text = text.strip()
    link = _CHANNEL_LINK.match(text)
    channel = link.group(1) if link else text.lstrip("#").strip()
    if not channel:
        raise ActionFailed("no channel was given")
    return channel
