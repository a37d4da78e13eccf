"""Who may decide what, and where (issue 33): a typed decision acts only on a request of its own
channel or of the approvals channel; a thread keeps its channel's rules; trust counts people's
decisions only, per workspace or guild; commands that call a model pass the flood limits and the
budget; /outbox and /trust are scoped; who decided is stored by id."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.approval_desk import Actor
from bot.command_values import TaskCommand
from bot.config import ConfigError, load_config
from bot.inbound import Inbound
from bot.persistence import DATABASE_FILE
from bot.platforms import run_platforms
from bot.usage import utc_day
from storage import approvals, channels, tasks, usage
from storage.database import open_database
from storage.records import ApprovalMode, ApprovalStatus, stricter_mode
from tests.conftest import run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET, buttons_of, envelope, message, signed_headers
from tests.ports import free_port
from tests.slack_harness import APPROVER, KEY, SlackHarness, StartSlack
from tests.test_outbox import wait_for_counts
from tests.test_slack import REQUEST, request_publication

CHANNEL_APPROVER = "UCHAN"  # approves only in OWN_CHANNEL
OWN_CHANNEL = "C0OWN"
APPROVALS = "CAPPROVALS"
EDITED = {"channel": "news", "text": "Buy now!"}
YOU = Actor("you", "you")


async def typed(slack: SlackHarness, text: str, ts: str, *, channel: str, user: str) -> None:
    """`user` types "@Roundtable TEXT" in `channel`, over signed HTTP."""
    event = {**message(f"<@{BOT_USER_ID}> {text}", ts, channel=channel, user=user), "type": "app_mention"}
    assert await slack.send_event(event, f"Ev{ts.replace('.', '')}") == 200
    await slack.bot.wait_idle()


async def test_a_channel_approver_cannot_view_revise_or_approve_another_platforms_request(
    start_slack: StartSlack,
) -> None:
    sections: dict[str, dict[str, Any]] = {
        "slack": {"approvals_channel": APPROVALS},
        "approvals": {
            "surface": "slack",
            "channel_approvers": {f"slack:{TEAM_ID}:{OWN_CHANNEL}": [CHANNEL_APPROVER]},
        },
    }
    async with start_slack(sections) as slack:
        service = slack.bot.roundtable.service
        await service.handle(Inbound("discord:42", "u1", "Ana", REQUEST, tenant="discord:9"))
        await slack.bot.wait_idle()
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        for n, text in enumerate(
            [f"/view {pending.id}", f"/revise {pending.id} {json.dumps(EDITED)}", f"/approve {pending.id}"]
        ):
            await typed(slack, text, f"1700000400.00010{n}", channel=OWN_CHANNEL, user=CHANNEL_APPROVER)

        still = await approvals.get(slack.bot.roundtable.db, pending.id)
        assert still is not None and still.status is ApprovalStatus.PENDING and still.args != EDITED
        refusal = f"Approval #{pending.id} belongs to another channel."
        assert [(e["user"], e["channel"], e["text"]) for e in slack.ephemerals()] == [
            (CHANNEL_APPROVER, OWN_CHANNEL, refusal)
        ] * 3
        assert not [
            p for p in slack.posts() if "arguments" in p.get("text", "").lower() and p.get("channel") == OWN_CHANNEL
        ]


async def test_the_approvals_channel_and_the_requests_own_channel_still_decide_typed(start_slack: StartSlack) -> None:
    sections: dict[str, dict[str, Any]] = {"slack": {"approvals_channel": APPROVALS}, "approvals": {"surface": "slack"}}
    async with start_slack(sections) as slack:
        service = slack.bot.roundtable.service
        await service.handle(Inbound("discord:42", "u1", "Ana", REQUEST, tenant="discord:9"))
        await slack.bot.wait_idle()
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        await typed(slack, f"/approve {pending.id}", "1700000410.000100", channel=APPROVALS, user=APPROVER)

        decided = await approvals.get(slack.bot.roundtable.db, pending.id)
        assert decided is not None and decided.status is not ApprovalStatus.PENDING and decided.decided_by == "Bea"
        assert [e["text"] for e in slack.ephemerals()] == [f"Approved #{pending.id}."]


async def test_the_approvals_channel_given_by_name_decides_typed(fake_slack: FakeSlackApi, tmp_path: Path) -> None:
    """`python -m bot run`'s own start (run_platforms): "#approvals" is resolved to its ID, and a decision
    typed there is taken, not refused as belonging to another channel."""
    port = free_port()
    slack_section = {"api_base_url": fake_slack.api_url, "host": "127.0.0.1", "port": port}
    config = load_config(
        write_config(
            tmp_path,
            {
                "slack": {**slack_section, "approvals_channel": "#approvals"},
                "approvals": {"approvers": {"slack": [APPROVER]}},
            },
        )
    )
    environ = {"SLACK_BOT_TOKEN": "xoxb-named", "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    running = asyncio.create_task(run_platforms(config, environ))
    try:
        async with aiohttp.ClientSession() as http:

            async def send(event: dict[str, Any], event_id: str) -> None:
                body = json.dumps(envelope(event, event_id))
                url = f"http://127.0.0.1:{port}/slack/events"
                async with http.post(url, data=body, headers=signed_headers(body, "application/json")) as answer:
                    assert answer.status == 200

            await listening(port, running)
            await send(message(REQUEST, "1700000430.000100"), "EvNamedOne")
            await fake_slack.wait_until(lambda: bool(requests_in(fake_slack, "C0APPROVALS")), timeout=15)
            [request] = requests_in(fake_slack, "C0APPROVALS")
            approval_id = buttons_of(request)[0]["value"]
            typed = f"<@{BOT_USER_ID}> /approve {approval_id}"
            await send(
                {**message(typed, "1700000430.000200", channel="C0APPROVALS", user=APPROVER), "type": "app_mention"},
                "EvNamedTwo",
            )
            await fake_slack.wait_until(lambda: bool(fake_slack.calls_to("chat.postEphemeral")), timeout=15)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running

    assert [call.args["text"] for call in fake_slack.calls_to("chat.postEphemeral")] == [f"Approved #{approval_id}."]


def requests_in(fake_slack: FakeSlackApi, channel: str) -> list[dict[str, Any]]:
    posted = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.error is None and c.status == 200]
    return [args for args in posted if buttons_of(args) and args.get("channel") == channel]


async def listening(port: int, running: asyncio.Task[bool], timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while True:
            if running.done():
                raise AssertionError(f"the bot stopped: {running.exception()!r}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return


# -- a thread keeps its channel's rules --------------------------------------------------------------

PARENT = "1700000500.000100"


def thread_posts(slack: SlackHarness) -> list[dict[str, Any]]:
    return [p for p in slack.posts() if p.get("thread_ts") == PARENT]


async def test_a_paused_channels_thread_gets_no_reply_and_a_dismissed_persona_stays_out(
    start_slack: StartSlack,
) -> None:
    async with start_slack() as slack:
        await slack.say("Sage, shall we plan?", PARENT)
        await slack.say(f"<@{BOT_USER_ID}> /dismiss rex", "1700000500.000200")
        await slack.say("Rex, what do you say?", "1700000500.000300", thread_ts=PARENT)
        assert "Rex" not in [p.get("username") for p in thread_posts(slack)]

        await slack.say(f"<@{BOT_USER_ID}> /moderate pause", "1700000500.000400")
        before = len(thread_posts(slack))
        await slack.say("Sage, anything?", "1700000500.000500", thread_ts=PARENT)
        assert len(thread_posts(slack)) == before  # paused: no persona answers in the thread either
        await slack.say(f"<@{BOT_USER_ID}> /moderate resume", "1700000500.000600")
        assert [p.get("username") for p in thread_posts(slack)[before:]] == ["Sage"]  # answered on resume

        present = await channels.participants(slack.bot.roundtable.db, f"{KEY}:{PARENT}")
        assert "rex" not in present and "sage" in present


async def test_a_channels_pause_and_dismissal_hold_in_a_thread_that_keeps_its_own_rules(
    start_slack: StartSlack,
) -> None:
    async with start_slack() as slack:
        await slack.say("Sage, shall we plan?", PARENT)
        await slack.say(f"<@{BOT_USER_ID}> /moderate on 2", "1700000503.000100", thread_ts=PARENT)  # own rules now
        await slack.say(f"<@{BOT_USER_ID}> /dismiss rex", "1700000503.000200")
        await slack.say(f"<@{BOT_USER_ID}> /moderate pause", "1700000503.000300")
        before = len(thread_posts(slack))
        await slack.say("Rex and Sage, anything?", "1700000503.000400", thread_ts=PARENT)
        assert len(thread_posts(slack)) == before  # the channel's pause holds in the thread

        await slack.say(f"<@{BOT_USER_ID}> /moderate resume", "1700000503.000500", thread_ts=PARENT)
        assert slack.ephemerals()[-1]["text"] == "The channel this thread is in is paused: /moderate resume there."
        assert len(thread_posts(slack)) == before

        await slack.say(f"<@{BOT_USER_ID}> /moderate resume", "1700000503.000600")
        answered = [p.get("username") for p in thread_posts(slack)[before:] if p.get("username") != "Roundtable"]
        assert answered and "Rex" not in answered  # answered on the channel's resume, without the dismissed Rex
        assert "rex" not in await channels.participants(slack.bot.roundtable.db, f"{KEY}:{PARENT}")


@pytest.mark.parametrize(
    ("thread", "channel", "applies"),
    [
        (ApprovalMode.ON_THE_LOOP, ApprovalMode.IN_THE_LOOP, ApprovalMode.IN_THE_LOOP),
        (ApprovalMode.IN_COMMAND, ApprovalMode.IN_THE_LOOP, ApprovalMode.IN_COMMAND),
        (ApprovalMode.IN_THE_LOOP, ApprovalMode.IN_COMMAND, ApprovalMode.IN_COMMAND),
        (ApprovalMode.ON_THE_LOOP, ApprovalMode.ON_THE_LOOP, ApprovalMode.ON_THE_LOOP),
    ],
)
def test_a_threads_own_approval_mode_never_loosens_its_channels(
    thread: ApprovalMode, channel: ApprovalMode, applies: ApprovalMode
) -> None:
    assert stricter_mode(thread, channel) is applies is stricter_mode(channel, thread)


async def test_an_action_in_a_thread_set_on_the_loop_still_waits_under_an_in_the_loop_channel(
    start_slack: StartSlack,
) -> None:
    async with start_slack() as slack:
        await slack.say("Sage, shall we plan?", PARENT)
        mode = f"<@{BOT_USER_ID}> /approvals mode on-the-loop"
        await slack.say(mode, "1700000504.000100", thread_ts=PARENT, user=APPROVER)
        assert thread_posts(slack)[-1]["text"] == (
            "Approval mode here is on-the-loop, but this thread's channel is in-the-loop, and the stricter one applies."
        )
        await slack.say(REQUEST, "1700000504.000200", thread_ts=PARENT)
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        assert pending.action == "publish_post"  # it waits for a person, as in the channel
        assert slack.posts_to("news") == []


async def test_a_persona_quiet_in_the_channel_listens_only_in_its_threads_until_a_thread_changes_it(
    start_slack: StartSlack,
) -> None:
    async with start_slack() as slack:
        await slack.say("Sage, shall we plan?", PARENT)
        for command in ("/dismiss sage", "/dismiss nova", "/persona quiet rex"):
            await slack.say(f"<@{BOT_USER_ID}> {command}", f"1700000502.00010{len(slack.posts())}")
        before = len(thread_posts(slack))
        await slack.say("Anyone around?", "1700000502.000200", thread_ts=PARENT)
        assert thread_posts(slack)[before:] == []  # Rex, the only one left, listens only: in the thread too
        await slack.say("Rex, your view?", "1700000502.000300", thread_ts=PARENT)
        assert [p.get("username") for p in thread_posts(slack)[before:]] == ["Rex"]  # named: he answers

        await slack.say(f"<@{BOT_USER_ID}> /persona talk rex", "1700000502.000400", thread_ts=PARENT)
        await slack.say("Anyone around now?", "1700000502.000500", thread_ts=PARENT)
        assert thread_posts(slack)[-1].get("username") == "Rex"  # talks again in this thread
        db = slack.bot.roundtable.db
        assert await channels.speaking_participants(db, f"{KEY}:{PARENT}") == [("rex", False)]
        assert await channels.speaking_participants(db, KEY) == [("rex", True)]  # still quiet in the channel


async def test_a_thread_spends_its_channels_budget(start_slack: StartSlack) -> None:
    async with start_slack({"limits": {"channel_tokens_per_day": 30}}) as slack:
        await slack.say("Sage, shall we plan?", PARENT)
        await usage.add_usage(
            slack.bot.roundtable.db, {(utc_day(time.time()), KEY, "sage", "persona", "m"): (1, 40, 0, 0)}
        )
        before = len(thread_posts(slack))
        await slack.say("Sage, and in here?", "1700000501.000100", thread_ts=PARENT)

        after = thread_posts(slack)[before:]
        assert {p.get("username") for p in after} == {"Roundtable"}  # no persona: the channel's budget is spent
        assert any("model tokens for today" in p["text"] for p in after)


async def test_a_discord_thread_is_decided_by_its_channels_approvers(fake: FakeDiscord, open_bot: Any) -> None:
    owner = p.user(p.OWNER_USER_ID, "Owner")
    sections = {"approvals": {"channel_approvers": {f"discord:{p.TEXT_CHANNEL_ID}": [str(p.OWNER_USER_ID)]}}}
    async with open_bot(sections=sections) as bot:
        await fake.send_message(REQUEST, channel_id=p.THREAD_ID)
        await fake.wait_for_calls(
            "POST", rf"/channels/{p.THREAD_ID}/messages", where=lambda c: bool(c.json.get("components"))
        )
        [(message_id, _)] = [(i, m) for i, m in fake.messages.items() if m["components"]]
        [pending] = await approvals.pending(bot.app.db)
        await fake.click_button(message_id, f"approval:{pending.id}:approve", clicker=owner)
        await fake.wait_for_calls("PATCH", rf"/channels/{p.THREAD_ID}/messages/{message_id}")
        await settle(bot)

        decided = await approvals.get(bot.app.db, pending.id)
        assert decided is not None and decided.status is ApprovalStatus.EXECUTED
        assert decided.decided_by_id == str(p.OWNER_USER_ID)  # who decided, by id


# -- identity by id ----------------------------------------------------------------------------------


async def test_who_decided_is_stored_and_shown_by_id_not_by_name(start_slack: StartSlack) -> None:
    twin = "UTWIN"  # another approver who took the same display name
    async with start_slack({"approvals": {"approvers": {"slack": [APPROVER, twin]}}}) as slack:
        slack.fake.user_names[twin] = "Bea"
        request, pending = await request_publication(slack)
        assert await slack.click("approval_approve", request) == 200

        [update] = slack.updates()
        assert f"Approved by <@{APPROVER}>" in update["text"]
        decided = await approvals.get(slack.bot.roundtable.db, pending.id)
        assert decided is not None and (decided.decided_by_id, decided.decided_by_team) == (APPROVER, TEAM_ID)
        [audited] = [e for e in await approvals.audit_events(slack.bot.roundtable.db) if e.event == "approved"]
        assert (audited.actor, audited.actor_id, audited.actor_team) == ("Bea", APPROVER, TEAM_ID)


# -- commands that call a model pass the flood limits and the budget ---------------------------------


def spend_the_budget(db: Any, key: str) -> Any:
    return usage.add_usage(db, {(utc_day(time.time()), key, "sage", "persona", "m"): (1, 40, 0, 0)})


async def test_task_after_the_budget_is_spent_is_refused(start_slack: StartSlack) -> None:
    async with start_slack({"limits": {"channel_tokens_per_day": 30}}) as slack:
        db = slack.bot.roundtable.db
        await spend_the_budget(db, KEY)
        assert (await slack.command("/task", "plan the launch"))[0] == 200
        await slack.say(f"<@{BOT_USER_ID}> /moderate pause", "1700000600.000100")
        await slack.say(f"<@{BOT_USER_ID}> /moderate resume", "1700000600.000200")

        refusal = "This channel has used its 30 model tokens for today: that waits until tomorrow (UTC)."
        assert [r["text"] for r in slack.replies_to_command()] == [refusal]
        assert [e["text"] for e in slack.ephemerals()] == [refusal]  # /moderate resume: paused it stays
        assert await tasks.latest(db, KEY) is None
        channel = await channels.get_channel(db, KEY)
        assert channel is not None and channel.paused


async def test_the_task_runner_checks_the_budget_before_each_step(open_test_app: Any, port: Any) -> None:
    key = "console:tasks"
    async with open_test_app({"limits": {"channel_tokens_per_day": 30}}) as app:
        await app.service.handle(Inbound(key, "you", "you", "hello", tenant="console"))
        await app.service.wait_idle()
        await spend_the_budget(app.db, key)
        # Queued as a task that was started before the budget ran out (the command itself is checked too).
        reply, ok = await app.service.tasks.command(key, TaskCommand("start", "plan the launch"), None, YOU)
        await app.service.wait_idle()

        task = await tasks.latest(app.db, key)
        assert ok and task is not None and task.plan is None  # the planner was not called
        waits = (
            f"[system] Task #{task.id} waits: this channel has used today's model tokens. It goes on tomorrow (UTC)."
        )
        assert waits in port.notices()


async def test_a_command_that_calls_a_model_passes_the_flood_limits(open_test_app: Any) -> None:
    key = "console:busy"
    async with open_test_app({"limits": {"user_messages_per_minute": 1}}) as app:
        ana = Inbound(key, "ana", "Ana", "/task plan the launch", tenant="console")
        first = await app.service.handle(ana)
        second = await app.service.handle(replace(ana, text="/task replan do it in two steps"))
        await app.service.wait_idle()

    assert first is not None and first.ok
    assert second is not None and not second.ok and second.reply.startswith("Slow down a little")


# -- who manages a channel ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_slack_admin_flag_expires_and_counts_only_in_the_admins_own_workspace(start_slack: StartSlack) -> None:
    guest, other_team = "UGUEST", "T0OTHER"
    refusal = "Only channel managers can use /moderate prompt"
    async with start_slack() as slack:
        clock = Clock()
        slack.bot.names.clock = clock
        slack.fake.admins.add(guest)
        slack.fake.user_teams[guest] = other_team  # an admin of the guest's own workspace only
        await slack.say(f"<@{BOT_USER_ID}> /moderate prompt Be brief.", "1700000700.000100")
        await slack.say(
            f"<@{BOT_USER_ID}> /moderate prompt Be long.", "1700000700.000200", user=guest, user_team=other_team
        )
        slack.fake.admins.discard("UHUMAN")  # no longer an admin: believed for a few minutes at most
        clock.now += 301
        await slack.say(f"<@{BOT_USER_ID}> /moderate prompt reset", "1700000700.000300")

        refused = [(e["user"], e["text"].split(":")[0]) for e in slack.ephemerals() if e["text"].startswith("Only")]
        assert refused == [(guest, refusal), ("UHUMAN", refusal)]
        channel = await channels.get_channel(slack.bot.roundtable.db, KEY)
        assert channel is not None and channel.moderator_prompt == "Be brief."


def test_a_discord_manager_role_is_an_id_and_a_name_is_a_clear_config_error(make_config: Any) -> None:
    assert make_config({"discord": {"manager_role": str(p.MANAGER_ROLE_ID)}}).settings.discord.manager_role
    with pytest.raises(ConfigError, match=r"\[discord\] manager_role: expected a role id .* not a name"):
        make_config({"discord": {"manager_role": p.MANAGER_ROLE_NAME}})


# -- scoped views --------------------------------------------------------------------------------------


async def test_outbox_shows_this_channels_posts_and_all_only_to_approvers_of_every_channel(
    start_slack: StartSlack,
) -> None:
    sections = {"approvals": {"channel_approvers": {f"slack:{TEAM_ID}:{OWN_CHANNEL}": [CHANNEL_APPROVER, APPROVER]}}}
    async with start_slack(sections) as slack:
        db = slack.bot.roundtable.db
        slack.fake.outage("chat.postMessage", rate_limited_for=0, server_errors_for=3600)
        await slack.say("Sage, are you there?", "1700000800.000100")
        await slack.say("Sage, and here?", "1700000800.000200", channel=OWN_CHANNEL)
        await wait_for_counts(db, lambda counts: counts["waiting"] == 2, timeout=60)
        await typed(slack, "/outbox", "1700000800.000300", channel=OWN_CHANNEL, user=CHANNEL_APPROVER)
        await typed(slack, "/outbox all", "1700000800.000400", channel=OWN_CHANNEL, user=CHANNEL_APPROVER)
        await typed(slack, "/outbox all", "1700000800.000500", channel=OWN_CHANNEL, user=APPROVER)
        slack.fake.outage("chat.postMessage", rate_limited_for=0, server_errors_for=0)

        own, refused, everywhere = [e["text"] for e in slack.ephemerals()]
        assert own.splitlines()[0] == "Outbox: 1 waiting, 0 failed, 0 sent." and OWN_CHANNEL in own
        assert refused == "Only approvers of every channel can use /outbox all; without `all` it shows this channel."
        assert everywhere.splitlines()[0] == "Outbox: 2 waiting, 0 failed, 0 sent."


async def test_trust_all_is_for_approvers_of_every_channel(open_test_app: Any) -> None:
    sections = {"approvals": {"approvers": {"discord": ["d1", "d2"]}, "channel_approvers": {"discord:2": ["d2"]}}}
    async with open_test_app(sections) as app:
        for key in ("discord:1", "discord:2"):
            await app.service.handle(Inbound(key, "u1", "Ana", "hello", tenant="discord:A"))
        await app.service.wait_idle()
        d1 = await app.service.handle(Inbound("discord:1", "d1", "Dee", "/trust all", tenant="discord:A"))
        d2 = await app.service.handle(Inbound("discord:1", "d2", "Don", "/trust all", tenant="discord:A"))

    assert d1 is not None and d1.reply.startswith("Only approvers of every channel can use /trust all")
    assert d2 is not None and d2.reply.startswith("Trust levels in every workspace and guild:")


async def test_console_task_after_the_budget_is_spent_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"limits": {"channel_tokens_per_day": 30}})
    (tmp_path / "data").mkdir()
    db = await open_database(tmp_path / "data" / DATABASE_FILE)
    try:
        await spend_the_budget(db, "console:general")
    finally:
        await db.close()
    transcript = run_console(config, "/task plan the launch\n/task status\n")

    assert "[system] This channel has used its 30 model tokens for today: that waits until tomorrow (UTC)." in (
        transcript.splitlines()
    )
    assert "[system] No task here yet: /task TEXT starts one." in transcript.splitlines()
