"""An approved action's posts on Slack (publish_post, send_message), marked so a restart can find them.

Each message an action posts carries Slack message metadata naming its approval and the piece it is
(a long text is several messages): `event_type` and `event_payload` of chat.postMessage's `metadata`
(https://docs.slack.dev/reference/methods/chat.postMessage, "metadata";
https://docs.slack.dev/messaging/message-metadata). A run a stop cut short is looked up by that
marker, never by its text (two approved posts may say the same thing): the channel's messages since
a little before the run began are read with `include_all_metadata`
(https://docs.slack.dev/reference/methods/conversations.history), page by page
(https://docs.slack.dev/apis/web-api/pagination).

A direct message to a person goes to their Slackbot conversation, which the app cannot read back:
its look-up cannot finish, and its outcome stays unknown.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.action_targets import Target, is_user_id
from bot.slack.channel_names import channel_id_named, is_channel_id
from graph.action_marks import ActionRun, LookupUnfinished

ACTION_EVENT = "roundtable_action"  # the metadata event type of an approved action's post
CLOCK_MARGIN = 60.0  # seconds read before the run began, for a clock that differs from Slack's
PAGE = 15  # the most conversations.history gives an app not approved for the Slack Marketplace
PAGES = 20

_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError)


def action_metadata(run: ActionRun, piece: int) -> dict[str, Any]:
    return {"event_type": ACTION_EVENT, "event_payload": {"approval": run.approval_id, "piece": piece}}


async def posted_pieces(client: AsyncWebClient, target: Target, run: ActionRun) -> dict[int, str]:
    """Piece -> ts of what the cut run posted for its approval. Raises LookupUnfinished when the
    destination cannot be read, Slack refuses, or the window is too busy to read to its end."""
    if is_user_id(target.channel):
        raise LookupUnfinished("a direct message to a person cannot be read back on Slack")
    try:
        channel = target.channel if is_channel_id(target.channel) else await channel_id_named(client, target.channel)
        if channel is None:
            raise LookupUnfinished(f"there is no channel #{target.channel} the app can see")
        return await _marked_since(client, channel, run)
    except SlackApiError as exc:
        raise LookupUnfinished(f"Slack's history could not be read ({exc.response.get('error')})") from None
    except _ERRORS as exc:
        raise LookupUnfinished(f"Slack's history could not be read ({type(exc).__name__})") from None


async def _marked_since(client: AsyncWebClient, channel: str, run: ActionRun) -> dict[int, str]:
    found: dict[int, str] = {}
    cursor = ""
    for _ in range(PAGES):
        answer = await client.conversations_history(
            channel=channel,
            oldest=f"{run.since - CLOCK_MARGIN:.6f}",
            include_all_metadata=True,
            limit=PAGE,
            cursor=cursor or None,
        )
        for message in answer.get("messages") or []:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == ACTION_EVENT and payload.get("approval") == run.approval_id:
                found[int(payload.get("piece", 0))] = str(message.get("ts") or "")
        cursor = str((answer.get("response_metadata") or {}).get("next_cursor") or "")
        if not answer.get("has_more") or not cursor:
            return found
    raise LookupUnfinished(f"more than {PAGE * PAGES} messages since the run began: not all could be read")
