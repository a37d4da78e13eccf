"""The decision of which pieces of a Discord persona post an attempt of unknown outcome created
(bot/discord_bot/look_back.py): by the post's place in our sequence of webhook posts, never by text alone.
The whole path, through discord.py and the fake Discord, is tested in tests/test_platform_errors.py."""

from __future__ import annotations

from dataclasses import dataclass

from bot.discord_bot.look_back import WebhookSequence, pieces_created

WEBHOOK = 501
OTHER_WEBHOOK = 502


@dataclass(frozen=True)
class Author:
    name: str


@dataclass(frozen=True)
class Message:
    id: int
    content: str
    author: Author
    webhook_id: int | None = WEBHOOK


def nova(message_id: int, content: str, webhook_id: int | None = WEBHOOK) -> Message:
    return Message(message_id, content, Author("Nova"), webhook_id)


def created(
    messages: list[Message], chunks: list[str], other_posts: frozenset[int] | set[int] = frozenset()
) -> dict[int, int]:
    return pieces_created(messages, chunks, webhook_id=WEBHOOK, username="Nova", other_posts=other_posts)


def test_the_same_line_confirmed_for_an_earlier_post_is_never_taken_for_this_one() -> None:
    sequence = WebhookSequence()
    sequence.confirm(10, post=1)  # the first "Agreed.", confirmed; the second post is entry 2
    assert created([nova(10, "Agreed.")], ["Agreed."], sequence.others(2)) == {}


def test_the_webhooks_next_message_after_the_mark_is_this_posts_piece() -> None:
    assert created([nova(11, "Agreed.")], ["Agreed."]) == {0: 11}


def test_a_person_another_webhook_or_another_name_is_not_this_post() -> None:
    messages = [
        Message(11, "Agreed.", Author("ana"), webhook_id=None),
        nova(12, "Agreed.", webhook_id=OTHER_WEBHOOK),
        Message(13, "Agreed.", Author("Sage")),
    ]
    assert created(messages, ["Agreed."]) == {}


def test_pieces_are_found_in_their_order_and_a_stray_post_through_the_webhook_is_skipped() -> None:
    messages = [nova(11, "part one"), nova(12, "something else"), nova(13, "part two")]
    assert created(messages, ["part one", "part two", "part three"]) == {0: 11, 1: 13}


def test_pieces_this_post_confirmed_itself_count_as_its_own() -> None:
    sequence = WebhookSequence()
    sequence.confirm(11, post=2)  # piece 0 of entry 2, confirmed before piece 1 met a 5xx
    assert created([nova(11, "Agreed."), nova(12, "Agreed.")], ["Agreed.", "Agreed."], sequence.others(2)) == {
        0: 11,
        1: 12,
    }
    assert sequence.last_confirmed == 11
