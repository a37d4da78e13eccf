"""The real bolt AsyncApp over HTTP (and Socket Mode) against a fake Slack Web API, with signed requests."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any
from urllib.parse import urlencode

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from bot.slack.app import build_slack_app, make_web_client
from bot.slack.port import SlackPort
from bot.slack.runner import connected_socket_mode
from bot.slack.slack_bot import RecentlySeen
from graph.turn_text import split_turn
from storage import approvals, channels
from storage.records import Approval, ApprovalMode, ApprovalStatus
from tests.fake_models import FakeModels
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlackApi
from tests.fakes.slack_payloads import (
    CHANNEL,
    HUMAN,
    SIGNING_SECRET,
    buttons_of,
    envelope,
    message,
)
from tests.slack_harness import APPROVER, BOT_TOKEN, KEY, SlackHarness, StartSlack

# -- replies ---------------------------------------------------------------------------------------


async def test_channel_message_gets_a_reply_under_the_personas_name_and_icon(slack: SlackHarness) -> None:
    await slack.say("Sage, what do you make of this?", "1700000001.000100")
    await slack.say("Nova, and you?", "1700000002.000100")

    sage, nova = slack.posts()
    assert sage["channel"] == CHANNEL and "thread_ts" not in sage
    assert (sage["username"], sage["icon_emoji"]) == ("Sage", ":owl:")
    assert "what do you make of this" in sage["text"]
    assert (nova["username"], nova["icon_url"]) == ("Nova", "https://api.dicebear.com/9.x/bottts/png?seed=nova")
    assert "icon_emoji" not in nova
    assert slack.fake.calls_to("users.info")[0].args["user"] == HUMAN  # the author's name is looked up once
    assert len(slack.fake.calls_to("users.info")) == 1


async def test_threaded_message_is_answered_in_its_thread(slack: SlackHarness) -> None:
    await slack.say("Sage, in here please", "1700000003.000200", thread_ts="1700000000.000100")

    [reply] = slack.posts()
    assert reply["thread_ts"] == "1700000000.000100"


async def test_mention_of_the_bot_is_stripped_and_its_twin_events_answered_once(slack: SlackHarness) -> None:
    text = f"<@{BOT_USER_ID}> Sage, hello"
    event = message(text, "1700000004.000100")
    assert await slack.send_event(event, "EvTwinMessage") == 200
    assert await slack.send_event({**event, "type": "app_mention"}, "EvTwinMention") == 200
    await slack.bot.wait_idle()

    [reply] = slack.posts()
    assert "<@" not in reply["text"] and BOT_USER_ID not in reply["text"]


# -- slash commands --------------------------------------------------------------------------------


async def test_moderate_on_status_off_and_bad_arguments(slack: SlackHarness) -> None:
    assert await slack.command("/moderate", "on 3") == (200, "")
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and channel.moderated and channel.max_turns == 3
    [announcement] = slack.posts()
    assert announcement["username"] == "Roundtable" and "Moderation is on" in announcement["text"]

    await slack.command("/moderate", "status")
    [status] = slack.replies_to_command()
    assert status["response_type"] == "ephemeral" and "up to 3 turns" in status["text"]

    await slack.command("/moderate", "off")
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and not channel.moderated
    assert "Moderation is off" in slack.posts()[-1]["text"]

    status_code, body = await slack.command("/moderate", "maybe")
    assert status_code == 200
    usage = json.loads(body)
    assert usage["response_type"] == "ephemeral" and usage["text"].startswith("usage: /moderate on")
    assert len(slack.posts()) == 2 and len(slack.replies_to_command()) == 1


async def test_persona_invite_list_and_dismiss(slack: SlackHarness) -> None:
    await slack.command("/persona", "invite pixel")
    assert slack.posts()[-1]["text"] == "Pixel joined." and slack.posts()[-1]["username"] == "Roundtable"

    await slack.say("Pixel, paint us a picture", "1700000005.000100")
    pixel = slack.posts()[-1]
    assert pixel["username"] == "Pixel"
    assert pixel["icon_emoji"] == ":art:" and "icon_url" not in pixel  # Pixel's avatar is "🎨"

    await slack.command("/persona", "list")
    [listing] = slack.replies_to_command()
    assert listing["response_type"] == "ephemeral" and "* pixel: Pixel" in listing["text"]

    await slack.command("/persona", "dismiss pixel")
    assert slack.posts()[-1]["text"] == "Pixel left."
    assert "pixel" not in await channels.participants(slack.bot.roundtable.db, KEY)

    await slack.command("/persona", "invite zorg")
    assert "No persona 'zorg'" in slack.replies_to_command()[-1]["text"]
    _, body = await slack.command("/persona", "invite")
    usage = "usage: /persona list | invite PERSONA_ID | dismiss PERSONA_ID | quiet PERSONA_ID | talk PERSONA_ID"
    assert json.loads(body) == {"response_type": "ephemeral", "text": usage}


async def test_command_typed_after_a_mention_is_answered_privately(slack: SlackHarness) -> None:
    mention = {**message(f"<@{BOT_USER_ID}> /personas", "1700000005.000900"), "type": "app_mention"}
    assert await slack.send_event(mention, "EvTypedCommand") == 200
    await slack.bot.wait_idle()

    [private] = [call.args for call in slack.fake.calls_to("chat.postEphemeral")]
    assert private["user"] == HUMAN and "Personas (* = in this channel)" in private["text"]
    assert slack.posts() == []


# -- trust and dedupe ------------------------------------------------------------------------------


async def test_forged_signature_and_stale_timestamp_are_rejected(slack: SlackHarness) -> None:
    event = message("Sage, are you there?", "1700000006.000100")
    assert await slack.send_event(event, "EvForged", forged=True) == 401
    assert await slack.send_event(event, "EvStale", timestamp=int(time.time()) - 6 * 60) == 401
    form = urlencode({"command": "/moderate", "text": "on"})
    status, _ = await slack.post_signed(form, "application/x-www-form-urlencoded", forged=True)
    assert status == 401
    await slack.bot.wait_idle()

    assert slack.fake.calls_to("chat.postMessage") == []


@pytest.mark.parametrize("remembered", [4096, 0], ids=["memory-and-storage", "storage-only"])
async def test_redelivered_event_gets_exactly_one_reply(slack: SlackHarness, remembered: int) -> None:
    slack.bot.seen = RecentlySeen(capacity=remembered)
    event = message("Sage, only once please", "1700000007.000100")
    assert await slack.send_event(event, "EvRetried") == 200
    for attempt in ("1", "2"):
        retry = {"X-Slack-Retry-Num": attempt, "X-Slack-Retry-Reason": "http_timeout"}
        assert await slack.send_event(event, "EvRetried", headers=retry) == 200
    await slack.bot.wait_idle()

    assert len(slack.fake.calls_to("chat.postMessage")) == 1


async def test_bot_and_edited_messages_are_ignored(slack: SlackHarness) -> None:
    ours = message("Sage, reply to yourself", "1700000008.000100", bot_id="BBOT", user=BOT_USER_ID)
    other_bot = {**message("Sage, hello from a bot", "1700000008.000200", bot_id="BOTHER"), "subtype": "bot_message"}
    other_app = message("Sage, hello from an app's bot user", "1700000008.000250", bot_id="BOTHER", user="UOTHERAPP")
    edited = {
        "type": "message",
        "subtype": "message_changed",
        "channel": CHANNEL,
        "ts": "1700000008.000300",
        "message": {"type": "message", "user": HUMAN, "text": "Sage, edited", "ts": "1700000001.000100"},
    }
    for number, event in enumerate((ours, other_bot, other_app, edited)):
        assert await slack.send_event(event, f"EvIgnored{number}") == 200
    await slack.bot.wait_idle()
    assert slack.fake.calls_to("chat.postMessage") == []

    await slack.say("Sage, but a human is answered", "1700000008.000400")
    assert len(slack.posts()) == 1


async def test_persona_output_can_never_ping(slack: SlackHarness) -> None:
    # The scripted persona quotes the human line, so these control sequences reach its reply.
    await slack.say("Sage, <!channel> <!subteam^S0TEAM> @here wake up", "1700000009.000100")

    [reply] = slack.posts()
    assert "<" not in reply["text"]
    assert "&lt;!channel&gt;" in reply["text"] and "&lt;!subteam^S0TEAM&gt;" in reply["text"]
    assert "@\u200bhere" in reply["text"]


# -- Slack API failures ----------------------------------------------------------------------------


async def test_ratelimited_post_is_retried(slack: SlackHarness) -> None:
    slack.fake.rate_limit_next("chat.postMessage", retry_after=0)
    await slack.say("Sage, try again?", "1700000010.000100")

    first, second = slack.fake.calls_to("chat.postMessage")
    assert (first.status, first.error) == (429, "ratelimited")
    assert (second.status, second.args["username"]) == (200, "Sage")


@pytest.mark.parametrize("error", ["not_in_channel", "invalid_auth"])
async def test_failed_post_is_logged_without_secrets_and_the_app_carries_on(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture, error: str
) -> None:
    caplog.set_level(logging.DEBUG)
    slack.fake.fail_next("chat.postMessage", error)
    await slack.say("Sage, are you in here?", "1700000011.000100")
    await slack.say("Sage, and now?", "1700000012.000100")

    # The post that cannot succeed is given up, and the approvers are told (the outbox); then the next reply.
    failed, told, replied = slack.fake.calls_to("chat.postMessage")
    assert [failed.error, told.error, replied.error] == [error, None, None]
    assert told.args["text"].startswith(f"<@{APPROVER}> For the approvers: A persona's line for {KEY}")
    assert f"chat.postMessage in {KEY} failed: {error}" in caplog.text
    assert BOT_TOKEN not in caplog.text and SIGNING_SECRET not in caplog.text


async def test_health_check(slack: SlackHarness) -> None:
    async with slack.http.get(f"{slack.url}/healthz") as response:
        assert (response.status, await response.text()) == (200, "ok")


# -- approvals -------------------------------------------------------------------------------------

THREAD = "1700000020.000100"
REQUEST = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
NOVA_ICON = "https://api.dicebear.com/9.x/bottts/png?seed=nova"


async def request_publication(
    slack: SlackHarness, ts: str = "1700000020.000200", thread: str | None = THREAD
) -> tuple[dict[str, Any], Approval]:
    """Nova is asked (in `thread`, or at top level) to publish; returns the approval request message and its approval."""
    await slack.say(REQUEST, ts, **({"thread_ts": thread} if thread else {}))
    [request] = slack.approval_requests()
    [pending] = await approvals.pending(slack.bot.roundtable.db)
    return request, pending


async def status_of(slack: SlackHarness, approval: Approval) -> ApprovalStatus:
    current = await approvals.get(slack.bot.roundtable.db, approval.id)
    assert current is not None
    return current.status


def publishing_nova() -> FakeModels:
    """A model that asks to publish once, then says back whatever tool result it hears."""

    async def reply(speaker: str, messages: list[BaseMessage]) -> str | AIMessage:
        history, _ = split_turn(messages)  # the turn's question follows the tool's result
        if isinstance(history[-1], ToolMessage):
            return f"Noted: {history[-1].content}"
        call = {
            "name": "publish_post",
            "args": {"channel": "news", "text": "BUY NOW!!!"},
            "id": "call-1",
            "type": "tool_call",
        }
        return AIMessage(content="Posting the launch note right away.", tool_calls=[call])

    return FakeModels(reply)


async def test_an_action_request_posts_approval_buttons_in_its_thread(slack: SlackHarness) -> None:
    request, pending = await request_publication(slack)

    assert (request["channel"], request["thread_ts"], request["username"]) == (CHANNEL, THREAD, "Roundtable")
    assert {(b["action_id"], b.get("style"), b["value"]) for b in buttons_of(request)} == {
        ("approval_approve", "primary", str(pending.id)),
        ("approval_reject", "danger", str(pending.id)),
        ("approval_feedback", None, str(pending.id)),
        ("approval_view", None, str(pending.id)),
        ("approval_revise", None, str(pending.id)),
    }
    shown = json.dumps(request["blocks"])
    assert request["blocks"][0] == {
        "type": "context",
        "elements": [
            {"type": "image", "image_url": NOVA_ICON, "alt_text": "Nova"},
            {"type": "mrkdwn", "text": "*Nova* wants to run *publish_post*"},
        ],
    }
    assert request["blocks"][1]["text"]["text"] == "*channel:* news\n*text:* We launched!"
    assert f"<!date^{int(pending.expires_at)}^" in shown  # the expiry, in each reader's timezone
    assert slack.posts_to("news") == []


async def test_an_approvers_click_publishes_once_and_replaces_the_buttons(slack: SlackHarness) -> None:
    request, pending = await request_publication(slack)

    assert await slack.click("approval_approve", request) == 200
    [published] = slack.posts_to("news")
    assert (published["username"], published["icon_url"], published["text"]) == ("Nova", NOVA_ICON, "We launched!")
    [update] = slack.updates()
    assert (update["channel"], update["ts"]) == (CHANNEL, request["ts"])
    assert update["text"].startswith(f"Approval #{pending.id}: Approved by <@{APPROVER}> at <!date^")
    assert update["text"].endswith("executed: posted in #news")
    assert buttons_of(update) == [] and "We launched!" in json.dumps(update["blocks"])
    assert await status_of(slack, pending) is ApprovalStatus.EXECUTED

    await slack.click("approval_approve", request)  # a stale second click
    await slack.click("approval_reject", request)
    assert len(slack.posts_to("news")) == 1 and len(slack.updates()) == 1
    assert [(e["user"], e["channel"], e["thread_ts"]) for e in slack.ephemerals()] == [(APPROVER, CHANNEL, THREAD)] * 2
    assert all("was already decided (executed)" in e["text"] for e in slack.ephemerals())
    assert await status_of(slack, pending) is ApprovalStatus.EXECUTED


async def test_reject_with_feedback_opens_a_modal_and_the_persona_hears_the_feedback(start_slack: StartSlack) -> None:
    async with start_slack(models=publishing_nova()) as slack:
        await slack.say("Nova, announce the launch.", "1700000021.000200", thread_ts=THREAD)
        [request] = slack.approval_requests()
        [pending] = await approvals.pending(slack.bot.roundtable.db)

        await slack.click("approval_feedback", request)
        [opened] = [call.args for call in slack.fake.calls_to("views.open")]
        view = opened["view"]
        assert opened["trigger_id"] == "trigger.click.1"
        assert (view["callback_id"], view["private_metadata"]) == ("approval_feedback_modal", str(pending.id))
        assert view["blocks"][0]["element"]["type"] == "plain_text_input"
        assert slack.updates() == [] and await status_of(slack, pending) is ApprovalStatus.PENDING

        assert await slack.submit_feedback(view, "too salesy") == 200
        [update] = slack.updates()
        assert update["text"] == f"Approval #{pending.id}: Rejected by <@{APPROVER}>: too salesy"
        assert buttons_of(update) == []
        update_at = next(i for i, call in enumerate(slack.fake.calls) if call.method == "chat.update")
        after = [call.args for call in slack.fake.calls[update_at + 1 :] if call.method == "chat.postMessage"]
        assert [(p["username"], p["text"], p["thread_ts"]) for p in after] == [
            ("Nova", "Noted: Rejected by Bea: too salesy", THREAD)
        ]
        assert slack.posts_to("news") == []
        assert await status_of(slack, pending) is ApprovalStatus.REJECTED


async def test_a_non_approvers_clicks_are_refused_privately_and_it_stays_pending(slack: SlackHarness) -> None:
    request, pending = await request_publication(slack)

    await slack.click("approval_approve", request, user=HUMAN)
    await slack.click("approval_feedback", request, user=HUMAN)

    refusals = slack.ephemerals()
    assert [(e["user"], e["channel"], e["thread_ts"]) for e in refusals] == [(HUMAN, CHANNEL, THREAD)] * 2
    assert all(f"Only approvers can decide; #{pending.id} stays pending." == e["text"] for e in refusals)
    assert slack.fake.calls_to("views.open") == [] and slack.updates() == [] and slack.posts_to("news") == []
    assert await status_of(slack, pending) is ApprovalStatus.PENDING


async def test_buttons_posted_before_a_restart_still_decide(start_slack: StartSlack) -> None:
    async with start_slack() as before:
        request, pending = await request_publication(before)

    async with start_slack() as after:
        await after.click("approval_approve", request)
        assert [p["text"] for p in after.posts_to("news")] == ["We launched!"]
        [update] = after.updates()
        assert (update["channel"], update["ts"]) == (CHANNEL, request["ts"])
        assert f"Approved by <@{APPROVER}>" in update["text"]
        assert await status_of(after, pending) is ApprovalStatus.EXECUTED


async def test_a_failed_publication_is_shown_as_failed(slack: SlackHarness) -> None:
    request, pending = await request_publication(slack)

    slack.fake.fail_next("chat.postMessage", "channel_not_found")
    await slack.click("approval_approve", request)

    [update] = slack.updates()
    assert update["text"].endswith("but it failed: Slack did not deliver it (channel_not_found)")
    assert await status_of(slack, pending) is ApprovalStatus.FAILED


async def test_an_expired_request_loses_its_buttons(start_slack: StartSlack) -> None:
    async with start_slack({"approvals": {"timeout_minutes": 0.01}}) as slack:  # 0.6 s
        request, pending = await request_publication(slack)
        await asyncio.sleep(max(0.0, pending.expires_at - time.time()))
        await slack.bot.roundtable.service.approval_desk.wait_for_overdue_approvals(timeout=10)
        await slack.bot.wait_idle()

        [update] = slack.updates()
        assert update["ts"] == request["ts"] and update["text"].endswith("Expired: nobody decided in time.")
        assert buttons_of(update) == []
        assert await status_of(slack, pending) is ApprovalStatus.EXPIRED


async def test_bad_interactivity_payloads_change_nothing(slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    request, pending = await request_publication(slack)
    user = {"id": APPROVER, "username": "bea", "team_id": TEAM_ID}
    team = {"id": TEAM_ID, "domain": "fake"}
    modal = {"type": "modal", "callback_id": "approval_feedback_modal"}
    unreadable = [
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "actions": [{"action_id": "approval_approve", "value": "soon"}],
        },
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "actions": [{"action_id": "approval_approve", "value": "²"}],
        },
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "actions": [{"action_id": "approval_reject", "value": "9" * 5000}],
        },
        {
            "type": "block_actions",
            "team": team,
            "actions": [{"action_id": "approval_approve", "value": str(pending.id)}],
        },
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "actions": [{"action_id": "approval_feedback", "value": "0"}],
        },
        {"type": "view_submission", "user": user, "team": team, "view": modal},
        {
            "type": "view_submission",
            "user": user,
            "team": team,
            "view": {**modal, "private_metadata": "-1", "state": None},
        },
    ]
    for payload in unreadable:
        assert await slack.interact(payload) == 200
    await slack.interact(
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "channel": {"id": CHANNEL},
            "actions": [{"action_id": "approval_reject", "value": "999"}],
        }
    )
    assert [e["text"] for e in slack.ephemerals()] == ["There is no approval #999."]
    assert slack.updates() == [] and await status_of(slack, pending) is ApprovalStatus.PENDING
    assert "Traceback" not in caplog.text

    # Garbage no Slack would send: refused (an unreadable body) or left unhandled by bolt; the bot carries on.
    status, _ = await slack.post_signed("payload=%7Bnot+json", "application/x-www-form-urlencoded")
    assert status == 400
    status, _ = await slack.post_signed(urlencode({"payload": "{}"}), "application/x-www-form-urlencoded")
    assert status == 404
    await slack.click("approval_approve", request)
    assert await status_of(slack, pending) is ApprovalStatus.EXECUTED


async def test_approvals_and_trust_commands(slack: SlackHarness) -> None:
    _, pending = await request_publication(slack, thread=None)  # slash commands are the channel's, not a thread's

    await slack.command("/approvals", "")
    await slack.command("/trust", "")
    listing, trust = slack.replies_to_command()
    assert listing["response_type"] == trust["response_type"] == "ephemeral"
    assert listing["text"].startswith("Pending approvals")
    assert f"#{pending.id} Nova wants publish_post(channel='news', text='We launched!')" in listing["text"]
    assert trust["text"].startswith("Trust levels:") and "Nova: " in trust["text"]
    assert (
        "Nova: new (0 decided by people, 0% approved, 0 finished tasks, 0 failed, 0 days) — 50 more decided "
        "requests, 5 more finished tasks and 7 more days to reach proficient"
    ) in trust["text"].splitlines()

    posts_before = len(slack.posts())
    await slack.command("/approvals", "mode in-command")  # not an approver: refused
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and channel.approval_mode is ApprovalMode.IN_THE_LOOP
    await slack.command("/approvals", "mode in-command", user_id=APPROVER)
    channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
    assert channel is not None and channel.approval_mode is ApprovalMode.IN_COMMAND
    [announcement] = slack.posts()[posts_before:]
    assert (announcement["username"], announcement["text"]) == ("Roundtable", "Approval mode is now in-command.")
    replies = slack.replies_to_command()
    assert replies[-1]["text"] == "Only approvers can change the approval mode."
    assert len(replies) == 3  # the approver's change was announced in the channel, so no private reply

    _, body = await slack.command("/approvals", "mode yolo")
    assert json.loads(body) == {
        "response_type": "ephemeral",
        "text": "usage: /approvals [mode in-command|in-the-loop|on-the-loop | retry N | close N | forget SERVER.TOOL]",
    }
    _, body = await slack.command("/trust", "everyone")
    assert json.loads(body) == {"response_type": "ephemeral", "text": "usage: /trust [all]"}


async def test_repeated_model_failures_mention_only_the_approvers(slack: SlackHarness) -> None:
    await slack.say("Nova, Sage and Rex: !!fail 2", "1700000022.000100")
    await slack.say("Rex? !!fail 1 <!channel>", "1700000022.000200")

    [alert] = [post for post in slack.posts() if "For the approvers" in post["text"]]
    assert alert["text"].startswith(f"<@{APPROVER}> For the approvers: ") and alert["username"] == "Roundtable"
    assert "<!" not in alert["text"]


# -- Socket Mode -----------------------------------------------------------------------------------


async def test_socket_mode_connects_answers_an_event_and_closes(open_test_app, fake_slack: FakeSlackApi) -> None:
    client = make_web_client(BOT_TOKEN, fake_slack.api_url)
    async with open_test_app({"slack": {"api_base_url": fake_slack.api_url}}, outbound=SlackPort(client)) as app:
        bot = build_slack_app(app, app.config.settings.slack, None, BOT_TOKEN, client)
        async with connected_socket_mode(bot.bolt, "xapp-fake-app-token"):
            await fake_slack.wait_until(lambda: fake_slack.socket_connections == 1)
            [opened] = fake_slack.calls_to("apps.connections.open")
            assert opened.headers["Authorization"] == "Bearer xapp-fake-app-token"

            payload = envelope(message("Sage, over the socket?", "1700000013.000100"), "EvSocket")
            await fake_slack.send_envelope({"envelope_id": "env-1", "type": "events_api", "payload": payload})
            await fake_slack.wait_until(lambda: any(r.get("envelope_id") == "env-1" for r in fake_slack.socket_replies))
            await bot.wait_idle()
            assert [p["username"] for p in fake_slack.delivered_posts()] == ["Sage"]
        await fake_slack.wait_until(lambda: fake_slack.socket_closes == 1)
        await bot.close()


# -- steering the moderator ----------------------------------------------------------------------


async def test_steering_commands_pause_name_and_show_reasons(slack: SlackHarness) -> None:
    await slack.command("/moderate", "pause")
    assert slack.posts()[-1]["text"].startswith("Replies are paused")
    await slack.say("Sage, still there?", "1700000900.000100")
    assert [p for p in slack.posts() if p["username"] == "Sage"] == []  # recorded, not answered

    await slack.command("/next", "zorg")
    await slack.command("/stop", "")
    await slack.command("/moderate", "reasons on")
    await slack.command("/moderate", "on")
    await slack.command("/moderate", "resume")  # answers what came in meanwhile, with reasons shown
    private = [r["text"] for r in slack.replies_to_command()]
    assert "'zorg' is not in this channel; choose one of Nova, Sage, Rex." in private
    assert "No round is running here." in private
    reasons = [p for p in slack.posts() if p.get("blocks") and p["blocks"][0]["type"] == "context"]
    assert reasons and reasons[0]["blocks"][0]["elements"][0]["text"].startswith("[moderator] next: Sage")
    assert [p for p in slack.posts() if p["username"] == "Sage"]


async def test_a_reaction_marks_the_message_while_its_round_runs(slack: SlackHarness) -> None:
    await slack.say("Sage, your thoughts?", "1700000950.000100")

    methods = [
        call.method
        for call in slack.fake.calls
        if call.method in ("reactions.add", "chat.postMessage", "reactions.remove")
    ]
    assert methods == ["reactions.add", "chat.postMessage", "reactions.remove"]  # on, the reply, off
    for method in ("reactions.add", "reactions.remove"):
        [call] = slack.fake.calls_to(method)
        assert (call.args["channel"], call.args["timestamp"], call.args["name"]) == (
            CHANNEL,
            "1700000950.000100",
            "hourglass_flowing_sand",
        )
