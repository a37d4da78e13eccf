"""/outbox: the approvers see what waits to be posted and what failed, typed in the console, as a Slack
slash command while Slack's chat.postMessage fails, and as a Discord app command after a channel went
away; anyone else is refused in one private line. /metrics counts both (roundtable_outbox_posts)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from storage import outbox
from tests.conftest import REPO, run_console, write_config
from tests.fakes import discord_payloads as dp
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import envelope, message
from tests.slack_harness import APPROVER, StartSlack
from tests.test_ops import bot_process, get, metric, wait_for_metric
from tests.test_outbox import FAST_RETRIES, wait_for_counts

REFUSED = "Only approvers can see the outbox."


def test_console_outbox_answers_approvers_and_refuses_anyone_else(tmp_path: Path) -> None:
    for who in ("approver", "guest"):
        (tmp_path / who).mkdir()
    approver = run_console(write_config(tmp_path / "approver"), "Sage, hello\n/outbox\n")
    # The console prints at once (nothing of it is queued): its outbox is empty.
    assert "[system] Outbox: 0 waiting, 0 failed, 0 sent." in approver.splitlines()

    guest = write_config(tmp_path / "guest", {"bot": {"personas_dir": str(REPO / "personas"), "console_user": "guest"}})
    transcript = run_console(guest, "/outbox\n")
    assert f"[system] {REFUSED}" in transcript.splitlines()
    assert "Outbox:" not in transcript


async def test_slack_outbox_lists_what_waits_during_an_outage_then_what_was_sent(
    start_slack: StartSlack, fake_slack: FakeSlackApi
) -> None:
    async with start_slack() as slack:  # the default backoff: a failed post waits a while before its next try
        db = slack.bot.roundtable.db
        fake_slack.outage("chat.postMessage", rate_limited_for=0, server_errors_for=3600)
        await slack.say("Sage, are you there?", "1700000401.000100")
        await wait_for_counts(db, lambda counts: counts["waiting"] == 1, timeout=60)
        await slack.command("/outbox", "")  # not an approver
        await slack.command("/outbox", "", user_id=APPROVER)

        fake_slack.outage("chat.postMessage", rate_limited_for=0, server_errors_for=0)  # over
        await wait_for_counts(db, lambda counts: counts["sent"] == 1, timeout=120)
        await slack.command("/outbox", "", user_id=APPROVER)

    refused, waiting, after = slack.replies_to_command()
    assert refused["text"] == REFUSED and refused["response_type"] == "ephemeral"
    assert waiting["response_type"] == "ephemeral"
    lines = waiting["text"].splitlines()
    assert lines[:2] == ["Outbox: 1 waiting, 0 failed, 0 sent.", "Waiting:"]
    assert "persona's line in slack:T0FAKE:C0GENERAL" in lines[2] and "service_unavailable" in lines[2]
    assert after["text"] == "Outbox: 0 waiting, 0 failed, 1 sent."
    [sage] = [post["text"] for post in fake_slack.delivered_posts()]  # posted once, after the outage
    assert sage and not sage.startswith("Outbox")


async def test_discord_outbox_shows_the_failed_post_to_approvers_only(fake: FakeDiscord, open_bot: Any) -> None:
    approver = {"approvals": {"approvers": {"discord": [str(dp.HUMAN_USER_ID)]}}}
    async with open_bot(sections={**FAST_RETRIES, **approver}) as bot:
        fake.missing_channels.add(dp.TEXT_CHANNEL_ID)
        await fake.send_message("Sage, still there?")
        await wait_for_counts(bot.app.db, lambda counts: counts["failed"] == 1 and not counts["waiting"])
        await asyncio.sleep(0.2)
        counts = await outbox.counts(bot.app.db)
        asked = await fake.send_slash_command("outbox", {}, permissions=dp.MEMBER_PERMISSIONS)
        [shown] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")
    async with open_bot(sections=FAST_RETRIES):  # nobody is a Discord approver by default
        asked = await fake.send_slash_command("outbox", {}, permissions=dp.MEMBER_PERMISSIONS)
        [refused] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")

    assert shown.json["flags"] == 64
    lines = shown.json["content"].splitlines()
    assert lines[:2] == [f"Outbox: 0 waiting, 1 failed, {counts['sent']} sent.", "Failed:"]
    assert f"persona's line in discord:{dp.TEXT_CHANNEL_ID}, 1 attempt: HTTP 404 (Discord code 10003)" in lines[2]
    assert refused.json["flags"] == 64 and refused.json["content"] == REFUSED


async def test_metrics_count_the_posts_waiting_and_failed(tmp_path: Path) -> None:
    async with FakeSlackApi() as slack, aiohttp.ClientSession() as http:
        sections = {"slack": {"api_base_url": slack.api_url, "approvals_channel": "C0APPROVALS"}}
        env = {"SLACK_BOT_TOKEN": "xoxb-outbox-metrics", "SLACK_APP_TOKEN": "xapp-outbox-metrics"}
        async with bot_process(tmp_path, sections, env) as url:
            await slack.wait_until(lambda: slack.socket_connections == 1, timeout=60)
            _, text = await get(http, f"{url}/metrics")
            assert 'roundtable_outbox_posts{status="waiting"} 0.0' in text.splitlines()
            assert 'roundtable_outbox_posts{status="failed"} 0.0' in text.splitlines()

            slack.missing_channels.add("C0GONE")  # Sage's line there fails for good; the approvers are told
            await slack.send_envelope(
                socket_event(message("Sage, still there?", "1700000601.000100", channel="C0GONE"), 1)
            )
            text = await wait_for_metric(http, url, "roundtable_outbox_posts", 'status="failed"', 1)
            await slack.wait_until(lambda: any(p["channel"] == "C0APPROVALS" for p in slack.delivered_posts()), 30)

            slack.outage("chat.postMessage", rate_limited_for=0, server_errors_for=3600)  # Sage's next line waits
            await slack.send_envelope(socket_event(message("Sage, and here?", "1700000602.000100"), 2))
            text = await wait_for_metric(http, url, "roundtable_outbox_posts", 'status="waiting"', 1)
            slack.outage("chat.postMessage", rate_limited_for=0, server_errors_for=0)  # over: it goes out

    assert metric(text, "roundtable_outbox_posts", 'status="waiting"') == 1
    assert metric(text, "roundtable_outbox_posts", 'status="failed"') == 1


def socket_event(event: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "envelope_id": f"env-outbox-{number}",
        "type": "events_api",
        "payload": envelope(event, f"EvOutbox{number}"),
    }
