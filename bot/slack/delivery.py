"""What the outbox needs from Slack beyond posting: which failures are worth another try, and whether
an attempt cut by a crash posted its message after all.

Each message the outbox sends carries Slack message metadata naming its entry and piece (a long
text is several messages). When an earlier attempt's outcome is unknown, the conversation's messages
since that attempt began are read once (conversations.history, or conversations.replies in a
thread, with include_all_metadata) and a piece found there is not posted again.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.port import PostFailed, Sending

OUTBOX_EVENT = "roundtable_outbox"  # the metadata event type of what the outbox posted
CLOCK_MARGIN = 60.0  # seconds read before the attempt began, for a clock that differs from Slack's

_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError)
_GONE = {"message_not_found", "cant_update_message", "edit_window_closed"}

# Trying again cannot help: the channel or the message is gone, the app may not post there, or Slack
# refuses this message as it is. The errors of https://docs.slack.dev/reference/methods/chat.postMessage
# (and chat.update) that no retry cures; anything else (ratelimited, internal_error, fatal_error,
# service_unavailable, request_timeout) is tried again.
PERMANENT = {
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "msg_too_long",
    "msg_blocks_too_long",
    "no_text",
    "invalid_blocks",
    "invalid_blocks_format",
    "invalid_arguments",
    "invalid_metadata_format",
    "metadata_too_large",
    "cannot_reply_to_message",
    "invalid_auth",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_authed",
    "missing_scope",
    "team_access_not_granted",
    "ekm_access_denied",
    "messages_tab_disabled",
    "restricted_action",
    "restricted_action_read_only_channel",
    "restricted_action_thread_locked",
    "restricted_action_thread_only_channel",
    *_GONE,
}


async def shows_already(
    client: AsyncWebClient, outbox: Sending | None, channel: str, ts: str, thread: str | None, text: str
) -> bool:
    """Whether an edit cut by a crash was made after all: the message `ts` reads `text` already."""
    if outbox is None or outbox.unknown_since is None:
        return False
    try:
        if thread and thread != ts:
            answer = await client.conversations_replies(
                channel=channel, ts=thread, oldest=ts, latest=ts, inclusive=True, limit=15
            )
        else:
            answer = await client.conversations_history(channel=channel, oldest=ts, latest=ts, inclusive=True, limit=1)
    except _ERRORS as exc:
        raise failure_of(exc) from None
    return any(m.get("ts") == ts and m.get("text") == text for m in answer.get("messages") or [])


def outbox_metadata(outbox: Sending, piece: int) -> dict[str, Any]:
    return {"event_type": OUTBOX_EVENT, "event_payload": {"entry": outbox.entry_id, "piece": piece}}


def is_gone(exc: BaseException) -> bool:
    """The message to update is gone: a new one is posted instead."""
    return isinstance(exc, SlackApiError) and exc.response.get("error") in _GONE


# Slack may have done what was asked before it failed: "It's possible some aspect of the operation
# succeeded before the error was raised" (internal_error; fatal_error likewise, in the Errors table of
# https://docs.slack.dev/reference/methods/chat.postMessage), and a 5xx from a proxy says nothing either
# way. The next attempt looks before it posts.
MAYBE_DONE = {"internal_error", "fatal_error"}


def failure_of(exc: BaseException) -> PostFailed:
    """A Slack failure as the outbox sees it: permanent, or worth another try (after Retry-After when given),
    after looking for what it may have posted when Slack's answer leaves that open."""
    if not isinstance(exc, SlackApiError):
        return PostFailed(type(exc).__name__, maybe_posted=True)  # the network or a timeout: no answer
    code = str(exc.response.get("error", "unknown_error"))
    if exc.response.status_code >= 500 or code in MAYBE_DONE:
        return PostFailed(code, maybe_posted=True)
    retry_after = None
    if exc.response.status_code == 429:
        for name, value in (exc.response.headers or {}).items():
            if name.lower() == "retry-after":
                with suppress(TypeError, ValueError, IndexError):
                    retry_after = float(value[0] if isinstance(value, list) else value)
    return PostFailed(code, permanent=code in PERMANENT, retry_after=retry_after)


# The look-back reads pages of 15, the most conversations.history and .replies give an app not approved for
# the Slack Marketplace (https://docs.slack.dev/changelog/2025/05/29/rate-limit-changes-for-non-marketplace-apps),
# following has_more and next_cursor (https://docs.slack.dev/apis/web-api/pagination); the client waits out
# a 429's Retry-After. A window too busy to read to its end leaves the outcome unknown: that post fails,
# the approvers are told, and it is not posted a second time.
LOOKBACK_PAGE = 15
LOOKBACK_PAGES = 20


async def posted_before(
    client: AsyncWebClient, outbox: Sending, channel: str, thread: str | None, piece: int
) -> str | None:
    """The ts of the piece an earlier attempt whose outcome is unknown posted, if it did."""
    if outbox.unknown_since is None:
        return None
    if not outbox.found:
        since = outbox.unknown_since - CLOCK_MARGIN
        outbox.found = {**await _posted_since(client, outbox.entry_id, since, channel, thread), -1: ""}  # read once
    return outbox.found.get(piece) or None


async def _posted_since(
    client: AsyncWebClient, entry_id: int, since: float, channel: str, thread: str | None
) -> dict[int, str]:
    """Piece -> ts of what the outbox posted for entry `entry_id` since `since`, read page by page."""
    window: dict[str, Any] = {"oldest": f"{since:.6f}", "include_all_metadata": True}
    found: dict[int, str] = {}
    cursor = ""
    for _ in range(LOOKBACK_PAGES):
        try:
            if thread:
                answer = await client.conversations_replies(
                    channel=channel, ts=thread, limit=LOOKBACK_PAGE, cursor=cursor or None, **window
                )
            else:
                answer = await client.conversations_history(
                    channel=channel, limit=LOOKBACK_PAGE, cursor=cursor or None, **window
                )
        except _ERRORS as exc:
            raise failure_of(exc) from None
        for message in answer.get("messages") or []:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == OUTBOX_EVENT and payload.get("entry") == entry_id:
                found[int(payload.get("piece", 0))] = str(message.get("ts") or "")
        cursor = str((answer.get("response_metadata") or {}).get("next_cursor") or "")
        if not answer.get("has_more") or not cursor:
            return found
    raise PostFailed(
        f"outcome unknown: more than {LOOKBACK_PAGE * LOOKBACK_PAGES} messages since the attempt, not posted again",
        permanent=True,
    )
