"""People's 👍 and 👎 on personas' posts, a quality signal: Slack reactions (bot/slack/reactions.py),
Discord reactions (bot/discord_bot/reactions.py) and the console's /rate (bot/rate_command.py).

Each persona post the outbox has sent is noted with the platform messages it went out as (a long one
is several), its persona and the model that wrote it, so a reaction on any of its messages finds it.
One vote per person and post: a new one replaces the old, and taking the reaction back removes it. A
👎's author's next reply in the post's thread within the hour is kept as its reason. /usage and
/metrics show each persona's share of 👍 over SHARE_DAYS days.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from prometheus_client import Gauge

from bot.port import Sending
from personas import Persona
from storage import votes
from storage.database import Database
from storage.outbox import Entry

log = logging.getLogger(__name__)

SHARE_DAYS = 7
# The emoji that vote, by the names each platform gives them: Slack's short names ("+1", and with a
# skin tone "+1::skin-tone-2"; https://docs.slack.dev/reference/events/reaction_added), Discord's
# unicode characters (with a skin tone modifier after them).
_UP = {"+1", "thumbsup", "👍"}
_DOWN = {"-1", "thumbsdown", "👎"}
_SKIN_TONES = "\U0001f3fb\U0001f3fc\U0001f3fd\U0001f3fe\U0001f3ff"

THUMBS_UP_SHARE = Gauge(
    "roundtable_thumbs_up_share",
    f"Each persona's share of 👍 among the 👍 and 👎 people gave its posts in the last {SHARE_DAYS} days",
    ["persona"],
)
VOTES = Gauge("roundtable_votes", f"👍 and 👎 on each persona's posts in the last {SHARE_DAYS} days", ["persona"])


def is_up(emoji: str) -> bool | None:
    """True for 👍, False for 👎, None for any other emoji."""
    name = emoji.split("::", 1)[0].rstrip(_SKIN_TONES)
    return True if name in _UP else False if name in _DOWN else None


class Votes:
    def __init__(
        self,
        db: Database,
        personas: Mapping[str, Persona],
        model_of: Callable[[Persona], str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.personas = personas
        self.model_of = model_of
        self.clock = clock

    async def note_sent(self, entry: Entry, sent: Sending) -> None:
        """The outbox sent `entry`: a persona's post is noted with the messages it went out as."""
        persona = self.personas.get(str(entry.payload.get("persona")))
        if entry.kind != "post" or persona is None or not sent.messages:
            return
        post = votes.PersonaPost(
            f"outbox:{entry.id}",
            entry.channel_key,
            sent.reply_place or entry.channel_key,
            persona.id,
            self.model_of(persona),
        )
        try:
            await votes.note_posted(self.db, sent.messages, post, at=self.clock())
        except Exception:  # posted all the same: only its reactions will not count
            log.exception("the messages of outbox entry %s were not noted for reactions", entry.id)

    async def react(self, message: str, voter: str, emoji: str, *, added: bool) -> bool:
        """A reaction given (or taken back) on a platform message; True when it counted as a vote:
        a 👍 or 👎 on a persona's post."""
        up = is_up(emoji)
        if up is None or not voter:
            return False
        post = await votes.post_of(self.db, message)
        if post is None:
            return False
        if added:
            await votes.vote(self.db, post, voter, up, at=self.clock())
            return True
        return await votes.withdraw(self.db, post.post, voter, up)

    async def rate(self, post: votes.PersonaPost, voter: str, up: bool, reason: str = "") -> None:
        """The console's /rate: a vote on a post, with its reason typed along."""
        await votes.vote(self.db, post, voter, up, reason=reason or None, at=self.clock())

    async def replied(self, voter: str, channel_key: str, text: str) -> bool:
        """A person's message arriving in `channel_key`: the reason of their 👎 on a post whose thread it is in."""
        return await votes.keep_reason(self.db, voter, channel_key, text, at=self.clock())

    async def report(self, channel_key: str) -> str:
        since = self.clock() - SHARE_DAYS * 86400
        shares = await votes.shares_since(self.db, since, channel_key=channel_key)
        lines = [f"👍 share of the 👍 and 👎 people gave each persona's posts here in the last {SHARE_DAYS} days:"]
        for share in shares:
            persona = self.personas.get(share.persona_id)
            name = persona.display_name if persona else share.persona_id
            lines.append(f"- {name}: {share_text(share)}")
        if not shares:
            lines.append("- no votes yet (react with 👍 or 👎 on a persona's post; in the console, /rate)")
        return "\n".join(lines)


def share_text(share: votes.Share) -> str:
    return f"{round(100 * share.up / share.votes)}% 👍 ({share.up} 👍, {share.down} 👎)"


async def refresh_vote_gauges(db: Database, now: float | None = None) -> None:
    """/metrics: each persona's share of 👍 over SHARE_DAYS days, in every channel."""
    since = (time.time() if now is None else now) - SHARE_DAYS * 86400
    shares = await votes.shares_since(db, since)
    THUMBS_UP_SHARE.clear()  # a persona whose votes are all older is no longer shown
    VOTES.clear()
    for share in shares:
        THUMBS_UP_SHARE.labels(share.persona_id).set(share.up / share.votes)
        VOTES.labels(share.persona_id).set(share.votes)


def persona_model(default: str) -> Callable[[Persona], str]:
    """The model that writes a persona's posts, as graph/models/chat.py picks it: its own, else the default."""
    return lambda persona: persona.model or default
