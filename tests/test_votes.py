"""Votes on personas' posts on SQLite and PostgreSQL: the console's /rate through the service (one vote
per person and post, a new one replaces the old, the reason typed along), its usage line, /usage's
share, and storage's rules for reactions (taking one back, a 👎's reason within the hour)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import generate_latest

from bot.inbound import Inbound
from bot.ops import refresh_gauges
from bot.votes import is_up
from storage import votes
from storage.database import Database
from tests.conftest import Opener

KEY = "console:general"


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def say(app: Any, text: str, who: str = "ana") -> str:
    """What the service answers `who` (a command's reply), after any round it started has run."""
    reply = await app.service.handle(Inbound(KEY, who, who.title(), text))
    await app.service.wait_idle()
    return "" if reply is None else reply.reply


async def test_rate_lists_the_newest_posts_and_stores_one_vote_per_person_and_post(open_test_app: Any) -> None:
    async with open_test_app() as app:
        assert await say(app, "/rate") == "No persona has posted here yet."
        await say(app, "Sage, what do you make of this?")
        await say(app, "Nova, and you?")
        listing = await say(app, "/rate")
        assert listing.splitlines()[1].startswith("1. Nova: «") and listing.splitlines()[2].startswith("2. Sage: «")

        assert (await say(app, "/rate 2 up")).startswith("👍 on Sage's post 2")
        await say(app, "/rate 2 up")  # the same again
        await say(app, "/rate 2 down too vague", who="ben")
        await say(app, "/rate 1 down")
        await say(app, "/rate 1 up")  # a changed mind replaces the vote

        shares = {s.persona_id: (s.up, s.down) for s in await votes.shares_since(app.db, time.time() - 60)}
        assert shares == {"sage": (1, 1), "nova": (1, 0)}
        usage = await say(app, "/usage")
        assert "- Sage: 50% 👍 (1 👍, 1 👎)" in usage and "- Nova: 100% 👍 (1 👍, 0 👎)" in usage
        [sage] = await app.db.fetch_all("SELECT DISTINCT post FROM post_votes WHERE persona_id = 'sage'")
        assert await votes.votes_on(app.db, sage[0]) == [("ana", 1, None), ("ben", -1, "too vague")]


async def test_rate_answers_a_bad_number_or_word_with_its_usage(open_test_app: Any) -> None:
    async with open_test_app() as app:
        await say(app, "Sage, hello")
        assert (await say(app, "/rate 3 up")).startswith("There is no post 3 here")
        for wrong in ("/rate 1", "/rate 1 sideways", "/rate 0 up", "/rate x up", "/rate 1 up because"):
            assert (await say(app, wrong)).startswith("usage: /rate [N up|down [reason]]"), wrong
        assert await votes.shares_since(app.db, 0) == []


async def test_taking_a_reaction_back_removes_only_that_vote(open_db: Opener) -> None:
    db: Database = await open_db()
    post = votes.PersonaPost("outbox:1", "slack:T:C", "slack:T:C:1.5", "sage", "qwen")
    await votes.note_posted(db, ["slack:C:1.5", "slack:C:1.6"], post)  # a long post: two messages
    assert await votes.post_of(db, "slack:C:1.6") == post
    assert await votes.post_of(db, "slack:C:9.9") is None

    await votes.note_posted(db, ["slack:C:0.5"], votes.PersonaPost("outbox:0", "slack:T:C", "x", "rex", "q"), at=1.0)
    assert await votes.forget_posts(db, 30 * 86400) == 1  # the month-old one: no vote any more
    assert await votes.post_of(db, "slack:C:0.5") is None and await votes.post_of(db, "slack:C:1.5") == post

    await votes.vote(db, post, "U1", True)
    await votes.vote(db, post, "U1", False)
    assert not await votes.withdraw(db, "outbox:1", "U1", True)  # the 👍 is gone already
    assert await votes.votes_on(db, "outbox:1") == [("U1", -1, None)]
    assert await votes.withdraw(db, "outbox:1", "U1", False)
    assert await votes.votes_on(db, "outbox:1") == []


async def test_a_thumbs_downs_reason_is_its_authors_next_reply_in_the_thread_within_the_hour(open_db: Opener) -> None:
    db: Database = await open_db()
    post = votes.PersonaPost("outbox:2", "slack:T:C", "slack:T:C:2.5", "rex", "qwen")
    await votes.vote(db, post, "U1", False, at=1000.0)
    await votes.vote(db, post, "U2", False, at=1000.0)
    await votes.vote(db, post, "U3", True, at=1000.0)

    assert not await votes.keep_reason(db, "U1", "slack:T:C", "in the channel", at=1010.0)  # not in its thread
    assert await votes.keep_reason(db, "U1", "slack:T:C:2.5", "wrong person", at=1020.0)
    assert not await votes.keep_reason(db, "U1", "slack:T:C:2.5", "a second reply", at=1030.0)
    assert not await votes.keep_reason(db, "U2", "slack:T:C:2.5", "too late", at=1000.0 + 3601)
    assert not await votes.keep_reason(db, "U3", "slack:T:C:2.5", "a 👍 takes none", at=1020.0)
    assert await votes.votes_on(db, "outbox:2") == [("U1", -1, "wrong person"), ("U2", -1, None), ("U3", 1, None)]

    await votes.vote(db, post, "U1", False, at=1040.0)  # the same vote again keeps its reason
    await votes.vote(db, post, "U2", True, at=1040.0)
    assert await votes.votes_on(db, "outbox:2") == [("U1", -1, "wrong person"), ("U2", 1, None), ("U3", 1, None)]


async def test_metrics_show_each_personas_share_of_thumbs_up_over_seven_days(open_db: Opener) -> None:
    db: Database = await open_db()
    now = time.time()
    rex = votes.PersonaPost("outbox:3", "discord:1", "discord:3", "rex", "qwen")
    nova = votes.PersonaPost("line:4", "console:x", "console:x", "nova", "qwen")
    for voter, up in (("U1", True), ("U2", True), ("U3", False), ("U4", True)):
        await votes.vote(db, rex, voter, up, at=now - 3600)
    await votes.vote(db, nova, "U1", True, at=now - 8 * 86400)  # older than the week: not shown
    await refresh_gauges(db)
    metrics = generate_latest().decode()
    assert 'roundtable_thumbs_up_share{persona="rex"} 0.75' in metrics
    assert 'roundtable_votes{persona="rex"} 4.0' in metrics
    assert 'persona="nova"' not in metrics


@pytest.mark.parametrize(
    ("emoji", "up"),
    [("+1", True), ("+1::skin-tone-6", True), ("thumbsup", True), ("👍", True), ("👍🏿", True)]
    + [("-1", False), ("👎🏻", False), ("eyes", None), ("heart", None), ("🎉", None), ("", None), ("+10", None)],
)
def test_only_thumbs_up_and_down_vote(emoji: str, up: bool | None) -> None:
    assert is_up(emoji) is up
