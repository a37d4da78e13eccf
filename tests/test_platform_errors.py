"""Errors, limits and deadlines that Slack and Discord document, met on the stricter fakes and handled
as documented (issue 35): a post the platform will never take fails at once and holds nothing back;
a server error that may have posted is looked for before the next attempt; the look-back reads the
whole window."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from slack_sdk.errors import SlackApiError

from bot.config import ConfigError
from bot.discord_bot.delivery import TOO_MANY_WEBHOOKS_NOTICE
from bot.outbox_report import outbox_report
from bot.slack.app import RATE_LIMIT_RETRIES, make_web_client
from bot.slack.delivery import failure_of
from bot.slack.runner import SlackAdapter
from storage import history, outbox
from storage.records import LineKind
from tests.conftest import REPO
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord, RecordedCall
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import envelope, message, signed_headers
from tests.ports import free_port
from tests.postgres_server import PostgresServer
from tests.slack_harness import APPROVER, EVENT_DEADLINE_SECONDS, KEY, StartSlack
from tests.test_discord import APPROVERS, PUBLISH, approval_request, edits_of
from tests.test_outbox import (
    FAST_RETRIES,
    Outage,
    delivered,
    discord_posts,
    start_slack_bot,
    wait_for_counts,
    wait_for_rows,
)

# https://docs.slack.dev/reference/methods/chat.postMessage, "Errors": what no retry cures.
SLACK_PERMANENT = (
    "restricted_action_read_only_channel",
    "restricted_action_thread_locked",
    "restricted_action_thread_only_channel",
    "cannot_reply_to_message",
    "msg_blocks_too_long",
    "invalid_blocks_format",
    "invalid_arguments",
    "invalid_metadata_format",
    "metadata_too_large",
    "messages_tab_disabled",
    "team_access_not_granted",
    "token_expired",
    "ekm_access_denied",
)


@pytest.mark.parametrize("error", SLACK_PERMANENT)
async def test_slack_errors_no_retry_cures_are_permanent(fake_slack: FakeSlackApi, error: str) -> None:
    fake_slack.fail_next("chat.postMessage", error)
    client = make_web_client("xoxb-errors", fake_slack.api_url)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0GENERAL", text="hello")
    failure = failure_of(raised.value)
    assert (failure.reason, failure.permanent) == (error, True)


async def test_slack_post_refused_for_good_fails_at_once_and_holds_nothing_back(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    sections = {**FAST_RETRIES, "slack": {"approvals_channel": "C0APPROVALS"}}
    async with start_slack(sections) as slack:
        fake_slack.refused_texts["second"] = "invalid_arguments"
        box = slack.bot.roundtable.outbox
        for text in ("the first", "the second", "the third", "the fourth"):
            await box.notice(KEY, text, None)
        db = slack.bot.roundtable.db
        await wait_for_counts(db, lambda counts: counts["sent"] == 4 and not counts["waiting"])
        await box.settled()
        report = await outbox_report(db)

    assert delivered(fake_slack, "C0GENERAL") == ["the first", "the third", "the fourth"]  # in order, not held
    refused = [c for c in fake_slack.calls_to("chat.postMessage") if c.error == "invalid_arguments"]
    assert len(refused) == 1  # tried once: Slack will never take it
    [told] = delivered(fake_slack, "C0APPROVALS")  # the approvers, once
    assert told.startswith(f"<@{APPROVER}> For the approvers: A notice for slack:T0FAKE:C0GENERAL")
    assert "invalid_arguments" in told
    assert report.startswith("Outbox: 0 waiting, 1 failed, 4 sent.")
    assert "notice in slack:T0FAKE:C0GENERAL, 1 attempt: invalid_arguments; skipped, the posts after it went on" in (
        report
    )


async def test_the_fake_slack_stamps_messages_with_the_clock(fake_slack: FakeSlackApi) -> None:
    client = make_web_client("xoxb-clock", fake_slack.api_url)
    before = time.time()
    stamps = [(await client.chat_postMessage(channel=channel, text="hi"))["ts"] for channel in ("C1", "C2", "C1")]
    after = time.time()
    assert all(before - 0.001 <= float(ts) <= after + 0.001 for ts in stamps)  # the time Slack took each one
    assert stamps == sorted(stamps, key=float) and len(set(stamps)) == 3  # unique, increasing
    assert all(len(ts.partition(".")[2]) == 6 for ts in stamps)


@pytest.mark.parametrize(
    ("status", "error"), [(503, "service_unavailable"), (200, "internal_error"), (200, "fatal_error")]
)
async def test_slack_post_that_failed_after_slack_took_it_is_not_posted_again(
    start_slack: StartSlack, fake_slack: FakeSlackApi, status: int, error: str
) -> None:
    async with start_slack(FAST_RETRIES) as slack:
        fake_slack.fail_after_doing_next("chat.postMessage", status=status, error=error)
        await slack.bot.roundtable.outbox.notice(KEY, "only once, please", None)
        await slack.bot.roundtable.outbox.notice(KEY, "and then this", None)
        await wait_for_counts(slack.bot.roundtable.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])

    assert fake_slack.texts_in("C0GENERAL") == ["only once, please", "and then this"]  # found, not posted again
    assert [c.error for c in fake_slack.calls_to("chat.postMessage")] == [error, None]
    [looked] = fake_slack.calls_to("conversations.history")  # the attempt after the failure looked first
    assert looked.args["include_all_metadata"] in (True, "true", "1")


async def test_discord_persona_post_that_failed_after_discord_took_it_is_not_posted_again(
    fake: FakeDiscord, open_bot: Any
) -> None:
    async with open_bot(sections=FAST_RETRIES) as bot:
        await fake.send_message("Nova, say hello")  # the webhook exists
        await fake.wait_for_webhook_executes()
        fake.server_errors_after_posting = 1  # Sage's line is created, then answered with a 503
        await fake.send_message("Sage, and you?")
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])
        await bot.app.outbox.settled()

    sage = [content for author, content in discord_posts(fake) if author == "Sage"]
    assert len(sage) == 1  # found among the channel's messages after the 503, not posted again
    assert len(fake.webhook_executes()) == 2  # discord.py did not send it again on the 503 either


async def post_agreed_twice(fake: FakeDiscord, bot: Any, *, then_fail: Callable[[], None]) -> list[str]:
    """Nova says "Agreed." twice through the outbox; `then_fail` arranges the second one's 5xx. Nova's
    lines in #general once the outbox has nothing left to send."""
    nova, key = bot.app.personas["nova"], f"discord:{p.TEXT_CHANNEL_ID}"
    await bot.app.outbox.post(key, nova, "Agreed.", None)
    await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])
    then_fail()
    await bot.app.outbox.post(key, nova, "Agreed.", None)
    await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])
    return [content for author, content in discord_posts(fake) if author == "Nova"]


async def test_discord_same_line_twice_whose_second_failed_after_discord_took_it_posts_each_once(
    fake: FakeDiscord, open_bot: Any
) -> None:
    def created_then_503() -> None:
        fake.server_errors_after_posting = 1

    async with open_bot(sections=FAST_RETRIES) as bot:
        nova = await post_agreed_twice(fake, bot, then_fail=created_then_503)

    assert nova == ["Agreed.", "Agreed."]  # the second was found after the first, not posted a third time
    assert len(fake.webhook_executes()) == 2


async def test_discord_same_line_twice_whose_second_failed_before_discord_took_it_posts_each_once(
    fake: FakeDiscord, open_bot: Any
) -> None:
    def refused_with_503() -> None:
        fake.webhook_server_errors = 1

    async with open_bot(sections=FAST_RETRIES) as bot:
        nova = await post_agreed_twice(fake, bot, then_fail=refused_with_503)

    assert nova == ["Agreed.", "Agreed."]  # the first "Agreed." was never taken for the second
    assert len(fake.webhook_executes()) == 3  # the second tried once more, after its look-back found nothing


class ProcessStopped(Exception):
    """The bot process going away while a post is out."""


async def agreed_twice_across_a_stop(
    fake: FakeDiscord, open_bot: Any, *, hold: Callable[[asyncio.Event], None], before_marks: bool = False
) -> list[RecordedCall]:
    """Nova says "Agreed." twice; the process stops while Discord holds the second one's execute (`hold`
    arranges how), so its outcome is never recorded, and a new process over the same database sends
    what is left. The Get Channel Messages calls the new process made."""
    nova, key = "nova", f"discord:{p.TEXT_CHANNEL_ID}"
    released = asyncio.Event()
    try:
        with pytest.raises(ProcessStopped):  # at once: nothing waits for the outbox, the send is cut
            async with open_bot(sections={**FAST_RETRIES, "bot": {"shutdown_grace_seconds": 0}}) as bot:
                await bot.app.outbox.post(key, bot.app.personas[nova], "Agreed.", None)
                await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])
                hold(released)
                await bot.app.outbox.post(key, bot.app.personas[nova], "Agreed.", None)
                await fake.wait_for_webhook_executes(2)
                if before_marks:  # as migration 26 leaves an attempt in flight when it runs
                    async with bot.app.db.transaction() as tx:
                        await tx.execute(
                            "UPDATE outbox SET look_back_mark = ? WHERE status = 'waiting'", (outbox.MARK_NEVER_NOTED,)
                        )
                raise ProcessStopped
        before_the_restart = len(fake.calls)
        async with open_bot(sections=FAST_RETRIES) as bot:
            await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])
    finally:
        released.set()
    return [c for c in fake.calls[before_the_restart:] if c.matches("GET", rf"/channels/{p.TEXT_CHANNEL_ID}/messages")]


async def test_discord_same_line_twice_whose_second_was_created_before_the_process_stopped_posts_each_once(
    fake: FakeDiscord, open_bot: Any
) -> None:
    def created_then_held(released: asyncio.Event) -> None:
        fake.held_after_creating = released

    reads = await agreed_twice_across_a_stop(fake, open_bot, hold=created_then_held)

    nova = [m for m in fake.history if m.get("webhook_id") and m["author"]["global_name"] == "Nova"]
    assert [m["content"] for m in nova] == ["Agreed.", "Agreed."]  # the second was found, not posted a third time
    assert len(fake.webhook_executes()) == 2
    looked_after = [int(c.query["after"]) for c in reads if "after" in c.query]
    assert looked_after == [int(nova[0]["id"])]  # only after the first line: the mark stored before the attempt


async def test_discord_same_line_twice_whose_second_never_reached_discord_before_the_process_stopped_posts_each_once(
    fake: FakeDiscord, open_bot: Any
) -> None:
    def lost(released: asyncio.Event) -> None:
        fake.lost_before_creating = released

    await agreed_twice_across_a_stop(fake, open_bot, hold=lost)

    assert [content for author, content in discord_posts(fake) if author == "Nova"] == ["Agreed.", "Agreed."]
    assert len(fake.webhook_executes()) == 3  # the second posted once more after the restart: the first is not it


async def test_discord_post_in_flight_before_marks_were_kept_is_found_by_its_text_since_it_was_queued(
    fake: FakeDiscord, open_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def created_then_held(released: asyncio.Event) -> None:
        fake.held_after_creating = released

    await agreed_twice_across_a_stop(fake, open_bot, hold=created_then_held, before_marks=True)

    assert [content for author, content in discord_posts(fake) if author == "Nova"] == ["Agreed.", "Agreed."]
    assert len(fake.webhook_executes()) == 2  # found by its text since it was queued: not posted a third time
    assert "before look-back marks were kept" in caplog.text


async def test_discord_notice_that_failed_after_discord_took_it_is_not_posted_again(
    fake: FakeDiscord, open_bot: Any
) -> None:
    async with open_bot(sections=FAST_RETRIES) as bot:
        fake.server_errors_after_posting = 1
        await bot.app.outbox.notice(f"discord:{p.TEXT_CHANNEL_ID}", "a notice, once", None)
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])

    assert [content for _, content in discord_posts(fake)] == ["a notice, once"]  # the nonce answered the first


async def test_slack_look_back_pages_through_a_busy_channel_to_find_the_post(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    def busy() -> None:  # 40 people's messages after the post Slack took: it is on the third page of 15
        for n in range(40):
            fake_slack.someone_says("C0GENERAL", f"chatter {n}")

    async with start_slack(FAST_RETRIES) as slack:
        fake_slack.fail_after_doing_next("chat.postMessage", then=busy)
        await slack.bot.roundtable.outbox.notice(KEY, "only once, please", None)
        await wait_for_counts(slack.bot.roundtable.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])

    assert fake_slack.texts_in("C0GENERAL").count("only once, please") == 1
    pages = fake_slack.calls_to("conversations.history")
    assert len(pages) == 3 and all(int(page.args["limit"]) <= 15 for page in pages)
    assert [bool(page.answer["has_more"]) for page in pages] == [True, True, False]


async def test_slack_look_back_that_cannot_read_the_whole_window_does_not_post_again(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    def very_busy() -> None:
        for n in range(15 * 20):
            fake_slack.someone_says("C0GENERAL", f"chatter {n}")

    sections = {**FAST_RETRIES, "slack": {"approvals_channel": "C0APPROVALS"}}
    async with start_slack(sections) as slack:
        fake_slack.fail_after_doing_next("chat.postMessage", then=very_busy)
        await slack.bot.roundtable.outbox.notice(KEY, "only once, please", None)
        db = slack.bot.roundtable.db
        await wait_for_counts(db, lambda counts: counts["failed"] == 1 and counts["sent"] == 1)
        report = await outbox_report(db)

    assert fake_slack.texts_in("C0GENERAL").count("only once, please") == 1  # not posted a second time
    [told] = delivered(fake_slack, "C0APPROVALS")
    assert "outcome unknown" in told
    assert "outcome unknown: more than 300 messages since the attempt" in report


async def test_discord_look_back_pages_through_a_busy_channel_to_find_the_post(
    fake: FakeDiscord, open_bot: Any
) -> None:
    def busy() -> None:  # 150 people's messages after Sage's line: past the newest 50, on the second page
        for n in range(150):
            fake.someone_says(p.TEXT_CHANNEL_ID, f"chatter {n}")

    async with open_bot(sections=FAST_RETRIES) as bot:
        await fake.send_message("Nova, say hello")  # the webhook exists
        await fake.wait_for_webhook_executes()
        fake.server_errors_after_posting, fake.while_failing = 1, busy  # Sage's line is created, then a 503
        await fake.send_message("Sage, and you?")
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])

    sage = [content for author, content in discord_posts(fake) if author == "Sage"]
    assert len(sage) == 1  # found past the newest 50, not posted again
    reads = fake.find_calls("GET", rf"/channels/{p.TEXT_CHANNEL_ID}/messages")
    looked = [read for read in reads if "after" in read.query]  # from the mark of Sage's line, oldest first
    assert looked and len(reads) == len(looked) + 1  # and one read of the newest message, before the first post


async def test_discord_autocomplete_names_fit_discords_100_characters(
    fake: FakeDiscord, open_bot: Any, tmp_path: Path
) -> None:
    personas = tmp_path / "personas"
    shutil.copytree(REPO / "personas", personas)
    long_name = "The Honourable Keeper of Exceedingly Long and Carefully Considered Names, Esq."  # 78 characters
    nova = (personas / "nova.toml").read_text()
    long_persona = nova.replace('id = "nova"', 'id = "keeper-of-names-and-titles"').replace('"Nova"', f'"{long_name}"')
    (personas / "keeper.toml").write_text(long_persona)
    async with open_bot(sections={"bot": {"personas_dir": str(personas)}}):
        await fake.send_autocomplete("persona", {"action": "invite", "persona_id": "kee"}, focused="persona_id")
        await fake.wait_for_calls("POST", r"/interactions/\d+/[^/]+/callback")

    [choices] = fake.autocomplete_answers  # Discord took the answer: every name within 100 characters
    [keeper] = choices
    assert keeper["value"] == "keeper-of-names-and-titles"
    assert len(keeper["name"]) <= 100 and keeper["name"].endswith("… (keeper-of-names-and-titles)")


async def test_discord_channel_full_of_webhooks_gets_persona_posts_as_the_bot_and_the_approvers_told_once(
    fake: FakeDiscord, open_bot: Any
) -> None:
    fake.add_others_webhooks(p.TEXT_CHANNEL_ID, 15)  # Discord's most: the bot cannot make its own
    async with open_bot(sections=FAST_RETRIES) as bot:
        await fake.send_message("Nova, are you there?")
        await fake.send_message("Sage, and you?")
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 2 and not counts["waiting"])

    posted = [content for _, content in discord_posts(fake)]
    assert posted[0] == TOO_MANY_WEBHOOKS_NOTICE  # once
    assert posted[1].startswith("**Nova:** ") and posted[2].startswith("**Sage:** ") and len(posted) == 3, posted
    assert (
        len(fake.find_calls("POST", rf"/channels/{p.TEXT_CHANNEL_ID}/webhooks")) == 1
    )  # refused once, not asked again


TWO_APPROVERS = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID), str(p.OWNER_USER_ID)]}}}


async def test_discord_approver_with_closed_dms_does_not_keep_the_others_from_being_told(
    fake: FakeDiscord, open_bot: Any
) -> None:
    fake.closed_dms.add(p.HUMAN_USER_ID)  # Ana, the first approver, takes no direct messages from the bot
    async with open_bot(sections={**FAST_RETRIES, **TWO_APPROVERS}) as bot:
        fake.missing_channels.add(p.TEXT_CHANNEL_ID)  # the approvers are told directly
        await fake.send_message("Sage, and now?")
        await wait_for_counts(bot.app.db, lambda counts: counts["failed"] == 1 and counts["sent"] == 1)

    owner = fake.direct_messages[p.OWNER_USER_ID]
    [told] = discord_posts(fake, owner)
    assert told[1].startswith(f"For the approvers (discord:{p.TEXT_CHANNEL_ID}): A persona's line")
    assert discord_posts(fake, fake.direct_messages[p.HUMAN_USER_ID]) == []


async def test_discord_approver_told_before_a_failure_is_not_told_again(fake: FakeDiscord, open_bot: Any) -> None:
    owner_dm = fake.direct_messages[p.OWNER_USER_ID] = p.snowflake()
    fake.server_errors_in[owner_dm] = 2  # the second approver's DM fails twice, then goes
    async with open_bot(sections={**FAST_RETRIES, **TWO_APPROVERS}) as bot:
        fake.missing_channels.add(p.TEXT_CHANNEL_ID)
        await fake.send_message("Sage, and now?")
        await wait_for_counts(bot.app.db, lambda counts: counts["failed"] == 1 and counts["sent"] == 1)

    assert len(discord_posts(fake, fake.direct_messages[p.HUMAN_USER_ID])) == 1  # once, across three attempts
    assert len(discord_posts(fake, owner_dm)) == 1


async def test_discord_notice_retried_after_its_nonce_expired_is_not_posted_again(
    fake: FakeDiscord, open_bot: Any
) -> None:
    fake.nonce_seconds = 0  # Discord checks a nonce for a few minutes: this retry comes later than that
    async with open_bot(sections=FAST_RETRIES) as bot:
        fake.server_errors_after_posting = 1
        await bot.app.outbox.notice(f"discord:{p.TEXT_CHANNEL_ID}", "a notice, once", None)
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])

    assert [content for _, content in discord_posts(fake)] == ["a notice, once"]  # found by the look-back


async def test_discord_persona_with_an_avatar_url_longer_than_discord_takes_still_posts(
    fake: FakeDiscord, open_bot: Any, tmp_path: Path
) -> None:
    personas = tmp_path / "personas"
    shutil.copytree(REPO / "personas", personas)
    long_url = "https://example.com/" + "a" * 2100 + ".png"
    nova = (personas / "nova.toml").read_text()
    (personas / "nova.toml").write_text(nova.replace("https://api.dicebear.com/9.x/bottts/png?seed=nova", long_url))
    async with open_bot(sections={"bot": {"personas_dir": str(personas)}}) as bot:
        await fake.send_message("Nova, hello")
        await wait_for_counts(bot.app.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])
        counts = await outbox.counts(bot.app.db)

    assert counts["failed"] == 0
    [execute] = fake.webhook_executes()
    assert execute.json["username"] == "Nova" and "avatar_url" not in execute.json  # the webhook's own avatar


async def test_slack_approvals_channel_named_is_resolved_to_its_id_at_start(
    fake_slack: FakeSlackApi, make_config: Any
) -> None:
    fake_slack.channel_names.update({f"C0MANY{n:04d}".upper(): f"busy-{n}" for n in range(250)})
    fake_slack.channel_names["C0APPROVALS"] = fake_slack.channel_names.pop("C0APPROVALS")  # on the second page
    config = make_config({"slack": {"api_base_url": fake_slack.api_url, "approvals_channel": "#approvals"}})
    adapter = SlackAdapter(config, "xoxb-names", None, "a-signing-secret")
    await adapter.resolve_channel_names()
    assert adapter.settings.approvals_channel == "C0APPROVALS"
    assert len(fake_slack.calls_to("conversations.list")) == 2  # paged through

    missing = make_config({"slack": {"api_base_url": fake_slack.api_url, "approvals_channel": "#nowhere"}})
    with pytest.raises(ConfigError, match=r"\[slack\] approvals_channel: no channel named '#nowhere'"):
        await SlackAdapter(missing, "xoxb-names", None, "a-signing-secret").resolve_channel_names()


async def test_slack_outbox_waits_out_a_retry_after_the_sdk_did_not_absorb(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    # slack_sdk's rate-limit handler retries RATE_LIMIT_RETRIES times, each after Retry-After; the answer
    # after those is the outbox's to wait out. Its own backoff (FAST_RETRIES) is far shorter than 2 s.
    for _ in range(RATE_LIMIT_RETRIES):
        fake_slack.rate_limit_next("chat.postMessage", retry_after=0)
    fake_slack.rate_limit_next("chat.postMessage", retry_after=2)
    async with start_slack(FAST_RETRIES) as slack:
        await slack.bot.roundtable.outbox.notice(KEY, "after the rate limit", None)
        await wait_for_counts(slack.bot.roundtable.db, lambda counts: counts["sent"] == 1 and not counts["waiting"])

    calls = fake_slack.calls_to("chat.postMessage")
    assert [c.status for c in calls] == [429] * (RATE_LIMIT_RETRIES + 1) + [200]
    unabsorbed, posted = calls[-2], calls[-1]
    # Not before the Retry-After it was given. The outbox schedules on time.time() and the fake stamps
    # time.monotonic(): a millisecond between the two clocks is not an early retry.
    assert posted.received_at >= unabsorbed.answered_at + 2 - 0.01
    assert fake_slack.texts_in("C0GENERAL") == ["after the rate limit"]


async def test_slack_post_taken_by_slack_before_a_sigkill_is_not_posted_again_after_the_restart(tmp_path: Path) -> None:
    port = free_port()
    database = tmp_path / "data" / "roundtable.sqlite3"
    short_claims = {"outbox": {"max_retry_seconds": 0.3, "claim_seconds": 5}}  # the dead process's claim lapses
    body = json.dumps(envelope(message("Sage, hello", "1700000011.000100"), "EvKilled"))

    def sages_lines() -> list[str]:
        return fake.texts_in("C0GENERAL")  # what Slack holds: the person's message came to the bot only

    async with FakeSlackApi() as fake, aiohttp.ClientSession() as http:
        released = fake.hold_answer_after_doing_next("chat.postMessage")
        bot = await start_slack_bot(tmp_path, fake, port, Outage(0), short_claims)
        try:
            url = f"http://127.0.0.1:{port}/slack/events"
            async with http.post(url, data=body.encode(), headers=signed_headers(body, "application/json")) as r:
                assert r.status == 200
            await fake.wait_until(lambda: len(sages_lines()) == 1, timeout=60)  # Slack has it; the bot waits
        finally:
            bot.send_signal(signal.SIGKILL)  # before the answer reached it, so before it was marked sent
            await bot.wait()
            released.set()
        await wait_for_rows(database, "SELECT COUNT(*) FROM outbox WHERE in_flight_since IS NOT NULL", 1)

        bot = await start_slack_bot(tmp_path, fake, port, Outage(0), short_claims)
        try:
            await wait_for_rows(database, "SELECT COUNT(*) FROM outbox WHERE status = 'sent'", 1)
        finally:
            bot.terminate()
            await bot.wait()

    assert len(sages_lines()) == 1  # found by the look-back, not posted again
    assert fake.calls_to("conversations.history")


async def test_slack_message_is_acknowledged_in_time_while_its_authors_name_is_still_being_looked_up(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    released = asyncio.Event()
    fake_slack.held_users["UNEW"] = released  # users.info for Cleo is not answered until released
    fake_slack.user_names["UNEW"] = "Cleo"
    async with start_slack() as slack:
        event = message("Sage, hello", "1700000012.000100", user="UNEW")
        try:
            status = await asyncio.wait_for(slack.send_event(event, "EvHeldName"), EVENT_DEADLINE_SECONDS)
        finally:
            released.set()
        await slack.bot.wait_idle()
        lines = await history.recent_channel_lines(slack.bot.roundtable.db, KEY, limit=10)

    assert status == 200  # acknowledged before Slack would have sent the event again
    assert [(line.author_name, line.text) for line in lines if line.kind is LineKind.HUMAN] == [("UNEW", "Sage, hello")]
    assert [post.get("username") for post in fake_slack.delivered_posts()] == ["Sage"]  # and answered


async def test_discord_approval_click_is_deferred_in_time_while_storage_is_locked(
    fake: FakeDiscord, open_bot: Any, postgres_server: PostgresServer
) -> None:
    url = await postgres_server.new_database()
    async with open_bot(sections={**APPROVERS, "storage": {"url": url}}):
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        locker = await asyncpg.connect(url)
        try:
            locked = locker.transaction()
            await locked.start()
            await locker.execute("LOCK TABLE approvals IN ACCESS EXCLUSIVE MODE")  # every read of it waits
            clicked = await fake.click_button(message_id, f"approval:{approval_id}:approve")
            # The first answer comes while storage is still locked (Discord refuses one after 3 s: 10062).
            [callback] = await fake.wait_for_calls("POST", rf"/interactions/{clicked}/[^/]+/callback", timeout=10)
            await locked.rollback()
        finally:
            await locker.close()
        [decided] = await edits_of(fake, message_id, "executed")  # the click went on once storage was back

    assert callback.json["type"] == 6
    assert decided.json["components"] == []
