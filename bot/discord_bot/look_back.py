"""Which pieces of a persona's post an attempt of unknown outcome created on Discord, known by the
post's place in our own sequence of posts through the channel's webhook, never by its text alone.

Execute Webhook takes no nonce (https://discord.com/developers/docs/resources/webhook#execute-webhook;
discord-api-spec openapi.json, IncomingWebhookRequestPartial: no nonce field), and after a 5xx the
message's id is unknown. What only this post has is its place in our own sequence of posts through
the webhook into that channel or thread: they are made one at a time (Delivery.as_persona), and
before a post's attempt the newest message there is stored with its outbox entry (its mark, read by
whichever process makes the next attempt, after a crash too). A message of the webhook
after the mark that is none of our other posts' can only be a piece of this post. Text never decides
alone: it only confirms that the message in this post's place is the piece expected there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import discord

from bot.port import PostFailed

LOOKBACK_LIMIT = 1000  # messages read back at most when an attempt's outcome is unknown (10 pages)

CONFIRMED_KEPT = 1000  # message ids kept per channel: far more than one look-back window holds


class Author(Protocol):
    """Who a message is by, as the look-back reads it."""

    @property
    def name(self) -> str: ...


class PostedMessage(Protocol):
    """What the look-back reads of a message (a discord.Message has it all)."""

    @property
    def id(self) -> int: ...
    @property
    def webhook_id(self) -> int | None: ...
    @property
    def content(self) -> str: ...
    @property
    def author(self) -> Author: ...


@dataclass
class WebhookSequence:
    """Our posts through the webhook into one channel or thread, as this process confirmed them:
    each message id with the post it is a piece of (its outbox entry id; -1 for a direct call, an action)."""

    confirmed: dict[int, int] = field(default_factory=dict)
    last_confirmed: int | None = None

    def confirm(self, message_id: int, post: int) -> None:
        remember(self.confirmed, message_id, post, CONFIRMED_KEPT)
        self.last_confirmed = max(message_id, self.last_confirmed or 0)

    def others(self, post: int | None) -> set[int]:
        """The message ids confirmed for any post but `post`."""
        return {message_id for message_id, of in self.confirmed.items() if of != post}


def pieces_created(
    messages: Sequence[PostedMessage],
    chunks: Sequence[str],
    *,
    webhook_id: int,
    username: str,
    other_posts: Collection[int],
) -> dict[int, int]:
    """Which pieces of one post (its `chunks`) earlier attempts created, piece -> message id.

    `messages`: the channel's (or thread's) messages after the post's mark, oldest first. With posts
    through the webhook there made one at a time, the webhook's messages after the mark that are not
    in `other_posts` (ids confirmed for other posts) are this post's pieces in order: each is taken as
    the next piece when its name and text are that piece's, else it is someone else's post through the
    webhook (another process's action) and skipped. A message before the mark is never looked at, so
    the same line posted earlier is never taken for this one."""
    created: dict[int, int] = {}
    for message in messages:
        if len(created) == len(chunks):
            break
        if message.id in other_posts or not through(message, webhook_id, username):
            continue
        if message.content == chunks[len(created)]:
            created[len(created)] = message.id
    return created


async def read_after(client: discord.Client, channel_id: int, mark: int) -> list[discord.Message]:
    """The messages after `mark`, oldest first, 100 a page (Get Channel Messages with `after`;
    discord.py waits out the rate limit). More than LOOKBACK_LIMIT leaves the outcome unknown
    (PostFailed, permanent): the post is not made again."""
    channel = client.get_partial_messageable(channel_id)
    messages = [m async for m in channel.history(limit=LOOKBACK_LIMIT + 1, after=discord.Object(mark))]
    if len(messages) > LOOKBACK_LIMIT:
        raise PostFailed(
            f"outcome unknown: more than {LOOKBACK_LIMIT} messages since the attempt, not posted again",
            permanent=True,
        )
    return messages


def through(message: PostedMessage, webhook_id: int, username: str) -> bool:
    """Posted through webhook `webhook_id` under `username` (Discord keeps the name's case as sent)."""
    return message.webhook_id == webhook_id and message.author.name.casefold() == username.casefold()


def remember(kept: dict[int, int], key: int, value: int, most: int) -> None:
    """Kept, the oldest dropped past `most`: a process that runs for months stays bounded."""
    kept[key] = value
    while len(kept) > most:
        kept.pop(next(iter(kept)))
