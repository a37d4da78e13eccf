"""People's 👍 and 👎 on personas' posts (migration 30): which platform message is which persona's
post, one vote per person and post, the reason a 👎 got, and each persona's share of 👍."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from storage.database import Database

REASON_SECONDS = 3600.0  # a 👎's author's reply in the post's thread this soon after it is its reason
MAX_REASON_CHARS = 2000


@dataclass(frozen=True)
class PersonaPost:
    """A persona's post as people vote on it: `post` names it once however many messages it took."""

    post: str
    channel_key: str
    reply_place: str  # the channel key a reply in the post's thread arrives with
    persona_id: str
    model: str


@dataclass(frozen=True)
class Share:
    persona_id: str
    up: int
    down: int

    @property
    def votes(self) -> int:
        return self.up + self.down


async def note_posted(db: Database, messages: Sequence[str], post: PersonaPost, *, at: float | None = None) -> None:
    """The platform messages `post` went out as, each found again by a reaction on it."""
    when = time.time() if at is None else at
    async with db.transaction() as tx:
        await tx.execute_many(
            "INSERT INTO persona_posts (message, post, channel_key, reply_place, persona_id, model, posted_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message) DO NOTHING",
            [
                (message, post.post, post.channel_key, post.reply_place, post.persona_id, post.model, when)
                for message in messages
            ],
        )


async def forget_posts(db: Database, older_than_seconds: float) -> int:
    """Which messages were which persona's posts, forgotten after that long: a reaction on one is no
    vote any more (the votes given keep their persona and model)."""
    async with db.transaction() as tx:
        return await tx.execute("DELETE FROM persona_posts WHERE posted_at < ?", (time.time() - older_than_seconds,))


async def post_of(db: Database, message: str) -> PersonaPost | None:
    """The persona's post a platform message is (a piece of); None for anything else."""
    row = await db.fetch_one(
        "SELECT post, channel_key, reply_place, persona_id, model FROM persona_posts WHERE message = ?", (message,)
    )
    return PersonaPost(row[0], row[1], row[2], row[3], row[4]) if row else None


async def vote(
    db: Database, post: PersonaPost, voter: str, up: bool, *, reason: str | None = None, at: float | None = None
) -> None:
    """`voter`'s vote on `post`, replacing any earlier one: the same vote keeps its reason unless given
    one, a changed mind starts without one."""
    when = time.time() if at is None else at
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO post_votes (post, voter, channel_key, reply_place, persona_id, model, vote, reason, voted_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (post, voter) DO UPDATE SET vote = excluded.vote, "
            "voted_at = excluded.voted_at, reason = COALESCE(excluded.reason, "
            "CASE WHEN post_votes.vote = excluded.vote THEN post_votes.reason END)",
            (
                post.post,
                voter,
                post.channel_key,
                post.reply_place,
                post.persona_id,
                post.model,
                1 if up else -1,
                reason[:MAX_REASON_CHARS] if reason else None,
                when,
            ),
        )


async def withdraw(db: Database, post: str, voter: str, up: bool) -> bool:
    """The vote taken back with its reaction; a vote of the other kind (given since) stays."""
    async with db.transaction() as tx:
        removed = await tx.execute(
            "DELETE FROM post_votes WHERE post = ? AND voter = ? AND vote = ?", (post, voter, 1 if up else -1)
        )
    return removed > 0


async def keep_reason(db: Database, voter: str, reply_place: str, text: str, *, at: float | None = None) -> bool:
    """`voter`'s reply arriving in `reply_place`: the reason of their newest 👎 there of the last hour
    that has none yet. True when it became one."""
    when = time.time() if at is None else at
    async with db.transaction() as tx:
        row = await tx.fetch_one(
            "SELECT post FROM post_votes WHERE voter = ? AND reply_place = ? AND vote = -1 AND reason IS NULL "
            "AND voted_at >= ? AND voted_at <= ? ORDER BY voted_at DESC LIMIT 1",
            (voter, reply_place, when - REASON_SECONDS, when),
        )
        if row is None:
            return False
        await tx.execute(
            "UPDATE post_votes SET reason = ? WHERE post = ? AND voter = ?", (text[:MAX_REASON_CHARS], row[0], voter)
        )
    return True


async def votes_on(db: Database, post: str) -> list[tuple[str, int, str | None]]:
    """(voter, +1 or -1, reason) of every vote on `post`, by voter."""
    rows = await db.fetch_all("SELECT voter, vote, reason FROM post_votes WHERE post = ? ORDER BY voter", (post,))
    return [(str(r[0]), int(r[1]), r[2]) for r in rows]


async def shares_since(db: Database, since: float, *, channel_key: str | None = None) -> list[Share]:
    """Each persona's 👍 and 👎 given since `since`, in one channel or all, most voted first."""
    params: list[float | str]
    where, params = "voted_at >= ?", [since]
    if channel_key is not None:
        where, params = f"{where} AND channel_key = ?", [since, channel_key]
    rows = await db.fetch_all(
        "SELECT persona_id, SUM(CASE WHEN vote = 1 THEN 1 ELSE 0 END), SUM(CASE WHEN vote = -1 THEN 1 ELSE 0 END) "
        f"FROM post_votes WHERE {where} GROUP BY persona_id",
        tuple(params),
    )
    shares = [Share(str(r[0]), int(r[1]), int(r[2])) for r in rows]
    return sorted(shares, key=lambda s: (-s.votes, s.persona_id))
