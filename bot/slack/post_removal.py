"""delete_post on Slack: the persona's own post in a channel, found by its text, taken down.

Slack deletes by channel ID and timestamp (https://docs.slack.dev/reference/methods/chat.delete; with
a bot token, only messages that bot posted), so the channel's name is looked up
(conversations.list), and each piece the post was split into is found in the channel's recent
history (https://docs.slack.dev/reference/methods/conversations.history) as the newest message of
the bot's posted under the persona's name with that text."""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.action_targets import ActionFailed, Target
from bot.slack.channel_names import channel_id_named, is_channel_id
from bot.slack.text import escape_for_slack, slack_messages

HISTORY_LIMIT = 200  # the newest messages looked through: an undo follows its post closely
_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError)


class PostNotFound(ActionFailed):
    """No post of the persona's with that text is among the newest: there is nothing to take down."""


async def delete_post(client: AsyncWebClient, target: Target, username: str, text: str) -> str:
    """Raises ActionFailed when the channel or the post is not found, or Slack refuses."""
    try:
        channel = target.channel if is_channel_id(target.channel) else await channel_id_named(client, target.channel)
        if channel is None:
            raise ActionFailed(f"there is no channel #{target.channel} the app can see")
        history = await client.conversations_history(channel=channel, limit=HISTORY_LIMIT)
        messages: list[dict[str, Any]] = list(history.get("messages") or [])
        found = [_newest(messages, username, piece) for piece in slack_messages(text)]
        stamps = [ts for ts in found if ts is not None]
        if len(stamps) < len(found):
            raise PostNotFound(f"no post of {username}'s with that text is among the newest in #{target.channel}")
        for ts in stamps:
            await client.chat_delete(channel=channel, ts=ts)
    except SlackApiError as exc:
        raise ActionFailed(f"Slack did not delete it ({exc.response.get('error', 'unknown_error')})") from None
    except _ERRORS as exc:
        raise ActionFailed(f"Slack did not delete it ({type(exc).__name__})") from None
    return target.done


def _newest(messages: list[dict[str, Any]], username: str, piece: str) -> str | None:
    """The ts of the newest message the bot posted as `username` reading `piece` (history is newest first)."""
    for message in messages:
        if (
            message.get("bot_id")
            and message.get("username") == username
            and message.get("text")
            in (
                piece,
                escape_for_slack(piece),
            )
        ):
            return str(message["ts"])
    return None
