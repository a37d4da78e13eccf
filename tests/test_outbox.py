"""The durable outbox: what Roundtable posts is stored with what it shows, then sent, in order per
conversation, through rate limits and outages, and once: on the fake Slack and the fake Discord,
in process and across a SIGKILL. The platform answers 429 with Retry-After, then 503, for
`--outage-seconds` (a few in make test; make chaos runs the `outage` tests again for two minutes):
the tests wait on what the platforms received, never on the clock."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import open_app
from bot.console import ConsolePort
from bot.outbox import POLL_SECONDS
from bot.outbox_report import outbox_report
from storage import channels, history, outbox, rounds
from storage.database import Database, one_transaction
from storage.inbox import Waiting
from storage.records import LineKind
from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET, envelope, message, signed_headers
from tests.ports import free_port
from tests.slack_harness import APPROVER, KEY, StartSlack
from tests.test_two_processes import wait_for_port

FAST_RETRIES = {"outbox": {"max_retry_seconds": 0.3}}
SLACK = ("slack",)
REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
SKIPPED = "Rex has no answer to that right now."  # a one-line round: the short notice, no "Round stopped"
SLACK_POSTING = ("chat.postMessage", "chat.update", "conversations.history", "conversations.replies")


@dataclass(frozen=True)
class Outage:
    """The platform refuses posts for `seconds`: the first quarter with 429 and Retry-After, then 503."""

    seconds: float

    @property
    def rate_limited_for(self) -> float:
        return self.seconds / 4

    @property
    def server_errors_for(self) -> float:
        return self.seconds - self.rate_limited_for

    @property
    def sections(self) -> dict[str, dict[str, Any]]:
        """The bot's longest wait between tries is an eighth of the outage, so its end is met soon after."""
        return {"outbox": {"max_retry_seconds": max(0.3, self.seconds / 8)}}

    @property
    def patience(self) -> float:
        """How long a test waits for everything to be posted."""
        return self.seconds + 90

    def begin(self, fake: FakeSlackApi | FakeDiscord, *, until_ended: bool = False) -> None:
        """From now on; with `until_ended`, the 503s last until `end`."""
        errors = 3600 if until_ended else self.server_errors_for
        if isinstance(fake, FakeSlackApi):
            for method in SLACK_POSTING:
                fake.outage(method, rate_limited_for=self.rate_limited_for, server_errors_for=errors, retry_after=1)
        else:
            fake.outage(rate_limited_for=self.rate_limited_for, server_errors_for=errors, retry_after=1.0)

    @staticmethod
    def end(fake: FakeSlackApi | FakeDiscord) -> None:
        if isinstance(fake, FakeSlackApi):
            for method in SLACK_POSTING:
                fake.outage(method, rate_limited_for=0, server_errors_for=0)
        else:
            fake.outage(rate_limited_for=0, server_errors_for=0)


@pytest.fixture
def outage(request: pytest.FixtureRequest) -> Outage:
    return Outage(float(request.config.getoption("--outage-seconds")))


# -- storage, on SQLite and PostgreSQL ---------------------------------------------------------------


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def test_a_turn_commits_its_line_posts_and_progress_together_or_not_at_all(open_db) -> None:
    db = await open_db()
    key = "slack:T1:C1"
    await channels.ensure_channel(db, key, participants=["nova"], moderated=False)
    await rounds.begin(db, Waiting(1, key, "Ana", "hi", (), None))

    with pytest.raises(RuntimeError):
        async with one_transaction(db):
            await history.append_line(db, key, LineKind.PERSONA, "nova", "Nova", "lost with its turn")
            async with db.transaction() as tx:
                await outbox.add_in(tx, key, None, "post", {"persona": "nova", "text": "lost with its turn"})
            await rounds.save_turn(db, key, {"turns_taken": 1}, None)
            assert await db.fetch_one("SELECT 1 FROM lines WHERE text = 'lost with its turn'")  # seen inside
            raise RuntimeError("the process dies here")
    assert await db.fetch_one("SELECT 1 FROM lines WHERE text = 'lost with its turn'") is None
    assert (await outbox.counts(db))["waiting"] == 0
    assert (await rounds.running(db, key)) == (Waiting(1, key, "Ana", "hi", (), None), None)

    async with one_transaction(db):
        await history.append_line(db, key, LineKind.PERSONA, "nova", "Nova", "kept")
        async with db.transaction() as tx:
            await outbox.add_in(tx, key, None, "post", {"persona": "nova", "text": "kept"})
        await rounds.save_turn(db, key, {"turns_taken": 1}, None)
    assert (await outbox.counts(db))["waiting"] == 1
    saved = {"batches": [], "floor": {"turns_taken": 1}}
    assert (await rounds.running(db, key)) == (Waiting(1, key, "Ana", "hi", (), None), saved)


async def test_processes_claim_each_conversations_oldest_entry_and_never_the_same_one(open_db) -> None:
    first, second = await open_db(), await open_db()
    async with first.transaction() as tx:
        for n, key in enumerate(["slack:T1:C1", "slack:T1:C1", "slack:T1:C2"]):
            await outbox.add_in(tx, key, None, "notice", {"text": f"#{n}"})
        assert await outbox.add_in(tx, "slack:T1:C2", None, "request", {}, dedupe="request:1") is not None
        assert await outbox.add_in(tx, "slack:T1:C2", None, "request", {}, dedupe="request:1") is None

    taken = await outbox.claim_due(first, "one", SLACK, lease_seconds=60)
    assert [e.payload["text"] for e in taken] == ["#0", "#2"]  # the head of each conversation
    assert await outbox.claim_due(second, "two", SLACK, lease_seconds=60) == []  # leased to "one"

    assert await outbox.mark_in_flight(first, taken[0].id, "one", 60)
    await outbox.mark_sent(first, taken[0].id, "ts-1")
    [following] = await outbox.claim_due(second, "two", SLACK, lease_seconds=60)
    assert following.payload["text"] == "#1"
    assert not await outbox.mark_in_flight(first, following.id, "one", 60)  # not one's any more


async def test_a_conversation_waiting_out_a_retry_is_due_only_then_and_only_where_it_is_served(open_db) -> None:
    db = await open_db()
    async with db.transaction() as tx:
        for n in range(3):
            await outbox.add_in(tx, "slack:T1:C1", None, "notice", {"text": f"#{n}"})
    [first] = await outbox.claim_due(db, "one", SLACK, lease_seconds=60)
    assert await outbox.mark_in_flight(db, first.id, "one", 60)
    assert await outbox.next_due_at(db, "one", SLACK) is None  # being sent; the entries behind it wait for it

    later = time.time() + 30
    await outbox.retry_later(db, first.id, "one", later, "ratelimited", unknown=False)
    assert await outbox.next_due_at(db, "one", SLACK) == pytest.approx(later)
    assert await outbox.claim_due(db, "one", SLACK, lease_seconds=60) == []
    assert await outbox.next_due_at(db, "one", ("discord",)) is None  # a Discord-only process leaves it alone


async def test_the_console_leaves_posts_for_slack_to_the_process_that_serves_slack(make_config) -> None:
    config = make_config()
    printed: list[str] = []
    async with open_app(config, ConsolePort(write=printed.append)) as app:
        async with app.db.transaction() as tx:
            await outbox.add_in(tx, "slack:T1:C1", None, "notice", {"text": "For the Slack channel"})
        await asyncio.sleep(POLL_SECONDS * 2)  # a sender would have taken it by now
        counts = await outbox.counts(app.db)

    assert counts == {"waiting": 1, "sent": 0, "failed": 0}
    assert not any("For the Slack channel" in line for line in printed)


# -- Slack, in process -----------------------------------------------------------------------------


def delivered(fake: FakeSlackApi, channel: str) -> list[str]:
    return [post["text"] for post in fake.delivered_posts() if post["channel"] == channel]


@pytest.mark.outage
async def test_slack_posts_everything_once_in_order_after_an_outage(
    start_slack: StartSlack, fake_slack: FakeSlackApi, outage: Outage
) -> None:
    async with start_slack(outage.sections) as slack:
        outage.begin(fake_slack)
        await slack.say("Nova and Sage, what now?", "1700000001.000100")
        await slack.say("Rex, !!fail 1 and you?", "1700000002.000100")  # Rex is skipped: a short notice
        await slack.say(REQUEST, "1700000003.000100")
        await slack.say("Sage, one more thought", "1700000004.000100", channel="C0OTHER")
        db = slack.bot.roundtable.db

        async def all_sent() -> None:
            while (await outbox.counts(db))["waiting"]:
                await asyncio.sleep(0.1)

        await asyncio.wait_for(all_sent(), outage.patience)
        counts = await outbox.counts(db)
        persona_lines = [
            row[0] for row in await db.fetch_all("SELECT text FROM lines WHERE kind = 'persona' ORDER BY id")
        ]

    statuses = [c.status for c in fake_slack.calls_to("chat.postMessage")]
    assert 429 in statuses and 503 in statuses  # the outage was met, and ridden out
    assert counts == {"waiting": 0, "sent": 6, "failed": 0}
    general = delivered(fake_slack, "C0GENERAL")
    expected = [line for line in persona_lines if "one more thought" not in line]
    assert [text for text in general if text in expected] == expected  # once each, in order
    assert general[2] == SKIPPED
    assert general[4].startswith("Approval #1: Nova wants to run publish_post")
    assert len(general) == len(set(general)) == 5  # Nova, Sage, the notice, Nova's words, the request
    assert len(delivered(fake_slack, "C0OTHER")) == 1


async def test_slack_channel_not_found_fails_once_and_the_approvers_are_told_once(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    sections = {**FAST_RETRIES, "slack": {"approvals_channel": "C0APPROVALS"}}
    async with start_slack(sections) as slack:
        fake_slack.missing_channels.add("C0GONE")
        await slack.say("Nova and Sage, are you there?", "1700000005.000100", channel="C0GONE")
        db = slack.bot.roundtable.db
        report = await outbox_report(db)

    attempts = [c for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "C0GONE"]
    assert [c.error for c in attempts] == ["channel_not_found"] * 2  # each line tried once: it cannot succeed
    [told] = delivered(fake_slack, "C0APPROVALS")
    assert told.startswith(f"<@{APPROVER}> For the approvers: A persona's line for slack:T0FAKE:C0GONE")
    assert "channel_not_found" in told
    assert report.startswith("Outbox: 0 waiting, 2 failed, 1 sent.")
    assert report.count("persona's line in slack:T0FAKE:C0GONE, 1 attempt: channel_not_found") == 2


async def test_slack_channel_gone_without_an_approvals_channel_tells_each_approver_directly(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    sections = {**FAST_RETRIES, "approvals": {"approvers": {"slack": [APPROVER]}}}
    async with start_slack(sections) as slack:
        fake_slack.missing_channels.add("C0GONE")
        await slack.say("Sage, are you there?", "1700000009.000100", channel="C0GONE")
        db = slack.bot.roundtable.db
        counts = await wait_for_counts(db, lambda counts: counts["sent"] == 1 and not counts["waiting"])

    assert counts == {"waiting": 0, "sent": 1, "failed": 1}  # Sage's line failed; the approver was told
    [told] = delivered(fake_slack, fake_slack.direct_message_with(APPROVER))  # the D… conversations.open gave
    assert told.startswith("For the approvers (slack:T0FAKE:C0GONE): A persona's line for slack:T0FAKE:C0GONE")
    assert "channel_not_found" in told


async def test_slack_post_whose_outcome_was_unknown_is_not_posted_again(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    async with start_slack(FAST_RETRIES) as slack:
        db = slack.bot.roundtable.db
        await slack.say("Sage, hello", "1700000006.000100")
        [first] = delivered(fake_slack, "C0GENERAL")
        # What a SIGKILL right after Slack took the post leaves: the entry waits, marked in flight.
        async with db.transaction() as tx:
            await tx.execute(
                "UPDATE outbox SET status = 'waiting', in_flight_since = ?, sent_ref = NULL", (time.time(),)
            )
        await slack.bot.roundtable.outbox.settled()
        await asyncio.wait_for(wait_for_no_waiting(db), 30)

    assert delivered(fake_slack, "C0GENERAL") == [first]  # found in conversations.history, not posted again
    [looked] = fake_slack.calls_to("conversations.history")
    assert looked.args["include_all_metadata"] in (True, "true", "1")


async def test_slack_long_post_cut_short_by_a_failure_is_not_posted_twice(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    text = "\n\n".join(f"Part {n}: " + "and so on " * 280 for n in range(3))  # three Slack messages
    async with start_slack(FAST_RETRIES) as slack:
        db = slack.bot.roundtable.db
        fake_slack.server_error_after("chat.postMessage", calls=1)  # the first part goes, the second meets a 503
        await slack.bot.roundtable.outbox.notice(KEY, text, None)
        await asyncio.wait_for(wait_for_no_waiting(db), 30)

    parts = [post.split(":")[0] for post in delivered(fake_slack, "C0GENERAL")]
    assert parts == ["Part 0", "Part 1", "Part 2"]  # the first part was found, not posted again
    assert [c.status for c in fake_slack.calls_to("chat.postMessage")] == [200, 503, 200, 200]


async def test_slack_edit_whose_outcome_was_unknown_is_not_made_again(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    sections = {**FAST_RETRIES, "approvals": {"approvers": {"slack": [APPROVER]}}}
    async with start_slack(sections) as slack:
        db = slack.bot.roundtable.db
        await slack.say("Rex, hello", "1700000007.000100")  # one line before, so the request is not the newest
        await slack.say(REQUEST, "1700000008.000100")
        [request] = slack.approval_requests()
        await slack.click("approval_reject", request)
        await slack.bot.roundtable.outbox.settled()
        [rejected] = slack.updates()
        # What a SIGKILL right after Slack took the edit leaves: the decision waits, marked in flight.
        async with db.transaction() as tx:
            await tx.execute(
                "UPDATE outbox SET status = 'waiting', in_flight_since = ? WHERE kind = 'decision'", (time.time(),)
            )
        await asyncio.wait_for(wait_for_no_waiting(db), 30)

    assert slack.updates() == [rejected]  # the message already read as the outcome: not edited again
    [looked] = fake_slack.calls_to("conversations.history")
    assert (looked.args["oldest"], looked.args["latest"]) == (request["ts"], request["ts"])


async def wait_for_counts(db: Database, done: Callable[[dict[str, int]], bool], timeout: float = 30) -> dict[str, int]:
    async with asyncio.timeout(timeout):
        while not done(counts := await outbox.counts(db)):
            await asyncio.sleep(0.05)
    return counts


async def wait_for_no_waiting(db: Database) -> None:
    while (await outbox.counts(db))["waiting"]:
        await asyncio.sleep(0.05)


# -- Discord, in process ---------------------------------------------------------------------------


DISCORD_APPROVER = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}}}


def discord_posts(fake: FakeDiscord, channel: int = p.TEXT_CHANNEL_ID) -> list[tuple[str, str]]:
    return [(author, content) for where, author, content in fake.posts if where == channel]


@pytest.mark.outage
async def test_discord_posts_everything_once_in_order_after_an_outage(
    fake: FakeDiscord, open_bot, outage: Outage
) -> None:
    async with open_bot(sections={**outage.sections, **DISCORD_APPROVER}) as bot:
        db = bot.app.db
        await fake.send_message("Nova, say hello")  # the webhook exists before the outage
        await fake.wait_for_webhook_executes()
        outage.begin(fake)
        for said, text in enumerate(("Nova and Sage, what now?", "Rex, !!fail 1 and you?", REQUEST), start=2):
            await fake.send_message(text)
            await wait_for_human_lines(db, said)  # each its own round
            await asyncio.wait_for(bot.app.service.wait_idle(), 60)
        await asyncio.wait_for(wait_for_no_waiting(db), outage.patience)
        persona_lines = [
            row[0] for row in await db.fetch_all("SELECT text FROM lines WHERE kind = 'persona' ORDER BY id")
        ]

    posted = [content for _, content in discord_posts(fake)]
    assert [content for content in posted if content in persona_lines] == persona_lines  # once each, in order
    assert posted[3] == SKIPPED
    assert posted[5].startswith("**Approval #1**: Nova wants to run `publish_post`")
    assert len(posted) == len(set(posted)) == 6  # hello, Nova, Sage, the notice, Nova's words, the request
    assert fake.outage_refusals > 0  # the outage was met, and ridden out


async def wait_for_human_lines(db: Database, count: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while (await db.fetch_one("SELECT COUNT(*) FROM lines WHERE kind = 'human'"))[0] < count:
            await asyncio.sleep(0.05)


async def test_discord_unknown_channel_fails_once_and_the_approvers_are_told(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections={**FAST_RETRIES, **DISCORD_APPROVER}) as bot:
        await fake.send_message("Nova, say hello")
        await fake.wait_for_webhook_executes()
        fake.missing_channels.add(p.TEXT_CHANNEL_ID)
        await fake.send_message("Sage, and now?")
        await wait_for_counts(bot.app.db, lambda counts: counts["failed"] >= 1 and not counts["waiting"])
        await asyncio.sleep(0.5)  # a second failure, or a second notice, would come now
        counts = await outbox.counts(bot.app.db)

    assert counts == {"waiting": 0, "sent": 2, "failed": 1}  # Nova's line, the notice; Sage's line
    assert len(discord_posts(fake)) == 1  # Nova's, before the channel went
    [told] = discord_posts(fake, fake.direct_messages[p.HUMAN_USER_ID])  # the channel is gone: a direct message
    assert told[1].startswith(f"For the approvers (discord:{p.TEXT_CHANNEL_ID}): A persona's line for discord:")
    assert "Discord code 10003" in told[1]


async def test_discord_persona_post_whose_outcome_was_unknown_is_not_posted_again(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=FAST_RETRIES) as bot:
        db = bot.app.db
        await fake.send_message("Sage, hello")
        await fake.wait_for_webhook_executes()
        await wait_for_counts(db, lambda counts: counts["sent"] == 1)
        # What a SIGKILL right after Discord took the post leaves: the entry waits, marked in flight.
        async with db.transaction() as tx:
            await tx.execute("UPDATE outbox SET status = 'waiting', in_flight_since = ?", (time.time(),))
        await wait_for_counts(db, lambda counts: counts["sent"] == 1)

    assert len(discord_posts(fake)) == 1  # found among the channel's newest messages, not posted again
    assert fake.find_calls("GET", rf"/channels/{p.TEXT_CHANNEL_ID}/messages")


# -- SIGKILL while posts are failing ----------------------------------------------------------------


async def start_slack_bot(
    directory: Path, fake: FakeSlackApi, port: int, outage: Outage, sections: dict[str, dict[str, Any]] | None = None
) -> asyncio.subprocess.Process:
    config = write_config(
        directory,
        {
            **outage.sections,
            **(sections or {}),
            "slack": {"api_base_url": fake.api_url, "host": "127.0.0.1", "port": port},
        },
    )
    env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-outbox", "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    for unused in ("SLACK_APP_TOKEN", "DISCORD_TOKEN", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        env.pop(unused, None)
    with open(directory / "bot.log", "ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config), cwd=REPO, env=env, stdout=log, stderr=log
        )
    try:
        await wait_for_port(port, process)
    except BaseException:
        process.kill()  # never left running after its test
        await process.wait()
        raise
    return process


# What each conversation of a SIGKILL test is asked during the outage, and how many posts each queues:
# a reply; a skipped persona's short notice; Nova's words and an approval request; a reply.
ASKED_DURING_THE_OUTAGE = (
    ("Nova, {where} question 1", 1),
    ("Rex, !!fail 1 and you?", 1),
    (REQUEST, 2),
    ("Nova, {where} question 2", 1),
)


def assert_answered_once_in_order(posted: list[str], persona_lines: list[str]) -> None:
    """What one conversation of a SIGKILL test shows once its outage is over."""
    assert [text for text in posted if text in persona_lines] == persona_lines, posted
    assert "question 1" in posted[0] and posted[1] == SKIPPED, posted
    assert "Approval #" in posted[3] and "wants to run" in posted[3] and "question 2" in posted[4], posted
    assert len(posted) == len(set(posted)) == 5, posted


def persona_lines_of(database: Path, channel_key: str) -> list[str]:
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT text FROM lines WHERE kind = 'persona' AND channel_key = ? ORDER BY id", (channel_key,)
        )
        return [row[0] for row in rows]


@pytest.mark.outage
async def test_slack_posts_survive_a_sigkill_during_an_outage(tmp_path: Path, outage: Outage) -> None:
    port = free_port()
    channels = ("C0ONE", "C0TWO")
    database = tmp_path / "data" / "roundtable.sqlite3"

    def refused() -> int:
        return sum(c.status in (429, 503) for c in fake.calls)

    async with FakeSlackApi() as fake, aiohttp.ClientSession() as http:
        bot = await start_slack_bot(tmp_path, fake, port, outage)
        began = time.monotonic()
        outage.begin(fake, until_ended=True)  # ended below, once the restarted bot has met it too
        try:
            queued = 0
            for n, (text, posts) in enumerate(ASKED_DURING_THE_OUTAGE):
                for c, channel in enumerate(channels):
                    event = message(text.replace("{where}", channel), f"17000001{n:02d}.{c:06d}", channel=channel)
                    body = json.dumps(envelope(event, f"Ev{channel}{n}"))
                    url = f"http://127.0.0.1:{port}/slack/events"
                    async with http.post(
                        url, data=body.encode(), headers=signed_headers(body, "application/json")
                    ) as r:
                        assert r.status == 200
                    queued += posts
                    await wait_for_rows(database, "SELECT COUNT(*) FROM outbox", queued)  # one round at a time
            await asyncio.sleep(max(0.0, began + outage.seconds / 2 - time.monotonic()))
            await fake.wait_until(lambda: refused() > 0, timeout=outage.patience)
            assert fake.delivered_posts() == []
        finally:
            bot.send_signal(signal.SIGKILL)  # halfway through the outage, every post queued and failing
            await bot.wait()

        refused_before = refused()
        bot = await start_slack_bot(tmp_path, fake, port, outage)
        try:
            await fake.wait_until(lambda: refused() > refused_before, timeout=60)  # the restarted bot meets it
            await asyncio.sleep(max(0.0, began + outage.seconds - time.monotonic()))
            outage.end(fake)
            await fake.wait_until(lambda: len(fake.delivered_posts()) >= 10, timeout=outage.patience)
            await asyncio.sleep(1.0)  # a second copy would arrive now
        finally:
            bot.terminate()
            await bot.wait()

    for channel in channels:
        posted = [post["text"] for post in fake.delivered_posts() if post["channel"] == channel]
        assert_answered_once_in_order(posted, persona_lines_of(database, f"slack:T0FAKE:{channel}"))


async def wait_for_rows(database: Path, query: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if database.exists():
            with sqlite3.connect(database) as db:
                try:
                    if db.execute(query).fetchone()[0] >= count:
                        return
                except sqlite3.OperationalError:
                    pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"never {count} rows: {query}")


# -- the Slack key of the harness is the one these tests post in --------------------------------------

assert KEY == "slack:T0FAKE:C0GENERAL"


async def start_discord_bot(directory: Path, fake: FakeDiscord, outage: Outage) -> asyncio.subprocess.Process:
    config = write_config(
        directory,
        {
            **outage.sections,
            **DISCORD_APPROVER,
            "discord": {"api_base_url": fake.api_url, "gateway_url": fake.gateway_url},
        },
    )
    env = {**os.environ, "DISCORD_TOKEN": fake.token}
    for unused in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        env.pop(unused, None)
    connected = fake.guilds_sent + 1
    with open(directory / "bot.log", "ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(config), "run", cwd=REPO, env=env, stdout=log, stderr=log
        )
    try:
        await fake.wait_until_guild_sent(timeout=180, count=connected)
    except BaseException:
        process.kill()  # never left running after its test
        await process.wait()
        raise
    return process


@pytest.mark.outage
async def test_discord_posts_survive_a_sigkill_during_an_outage(tmp_path: Path, outage: Outage) -> None:
    database = tmp_path / "data" / "roundtable.sqlite3"
    async with FakeDiscord() as fake:
        bot = await start_discord_bot(tmp_path, fake, outage)
        try:
            await fake.send_message("Nova, first of all")  # its webhook is made before the outage
            await fake.wait_for_webhook_executes(timeout=60)
            began = time.monotonic()
            outage.begin(fake, until_ended=True)  # ended below, once the restarted bot has met it too
            queued = 1
            for text, posts in ASKED_DURING_THE_OUTAGE:
                await fake.send_message(text.replace("{where}", "here"))
                queued += posts
                await wait_for_rows(database, "SELECT COUNT(*) FROM outbox", queued)  # one round at a time
            await asyncio.sleep(max(0.0, began + outage.seconds / 2 - time.monotonic()))
            await wait_for(lambda: fake.outage_refusals > 0, outage.patience)
            assert len(fake.posts) == 1
        finally:
            bot.send_signal(signal.SIGKILL)  # halfway through the outage, every post queued and failing
            await bot.wait()

        refused_before = fake.outage_refusals
        bot = await start_discord_bot(tmp_path, fake, outage)
        try:
            await wait_for(lambda: fake.outage_refusals > refused_before, 60)  # the restarted bot meets it
            await asyncio.sleep(max(0.0, began + outage.seconds - time.monotonic()))
            outage.end(fake)
            await wait_for(lambda: len(fake.posts) >= 6, outage.patience)
            await asyncio.sleep(1.0)  # a second copy would arrive now
        finally:
            bot.terminate()
            await bot.wait()

    posted = [content for _, content in discord_posts(fake)][1:]
    lines = persona_lines_of(database, f"discord:{p.TEXT_CHANNEL_ID}")[1:]
    assert_answered_once_in_order(posted, lines)


async def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.1)
