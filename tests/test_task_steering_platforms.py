"""People steering a task on Slack (the real bolt app against the fake Web API, signed requests) and
Discord (real discord.py against the fake REST and gateway): pause and resume across a restart, a
refusal for someone neither requester nor approver, takeover with the context handed over
privately, /task done, and cancel rejecting the task's pending approvals with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.discord_bot.runner import DiscordBot
from bot.slack.text import unescape_from_slack
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import CHANNEL
from tests.slack_harness import SlackHarness, StartSlack

ACT = '!!act publish_post {"channel": "news", "text": "We launched!"}'
STEERED = f"Announce the launch; research the reactions; review them {ACT}"
STRANGER = "USTRANGER"  # neither the requester (Ana) nor the approver (Bea)
MESSAGES = rf"/channels/{p.TEXT_CHANNEL_ID}/messages"
APPROVERS = {"approvals": {"approvers": {"discord": [str(p.OWNER_USER_ID)]}}}  # Ana requests; Owner approves
STRANGER_ON_DISCORD = p.user(1_100_000_000_000_000_099, "Cy")


# -- Slack -------------------------------------------------------------------------------------------


def slack_plan(slack: SlackHarness) -> list[str]:
    """The plan message as it reads now."""
    [posted] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args["text"] == "Task #1 (planning)"]
    return unescape_from_slack(slack.fake.messages[(CHANNEL, posted.answer["ts"])]["text"]).splitlines()


def slack_speakers(slack: SlackHarness) -> list[str]:
    return [post["username"] for post in slack.posts_to(CHANNEL) if post.get("username") in ("Nova", "Sage", "Rex")]


async def test_slack_a_paused_task_stays_paused_across_a_restart_and_a_stranger_may_not_steer_it(
    start_slack: StartSlack,
) -> None:
    async with start_slack() as slack:
        await slack.command("/task", STEERED)  # Nova's step waits for its approval
        await slack.command("/task", "pause", user_id=STRANGER)
        await slack.command("/task", "cancel", user_id=STRANGER)
        await slack.command("/task", "pause")
        assert slack_plan(slack)[:2] == [
            "Task #1: Announce the launch (paused by Ana)",
            "[>] 1. Announce the launch — Nova: waiting for approval #1",
        ]
        [request] = slack.approval_requests()
        await slack.click("approval_approve", request)
        assert slack_speakers(slack) == ["Nova", "Nova"]  # her step and her follow-up; Sage's step waits
        assert slack_plan(slack)[1].startswith("[x] 1. Announce the launch — Nova: ")

    replies = slack.replies_to_command()
    assert [r["text"] for r in replies[1:3]] == [
        "Only the task's requester or an approver can pause task #1.",
        "Only the task's requester or an approver can cancel task #1.",
    ]
    assert all(r["response_type"] == "ephemeral" for r in replies)

    async with start_slack() as slack:  # a restart: the task is still paused
        await slack.bot.wait_idle()
        assert slack_speakers(slack) == ["Nova", "Nova"]
        assert slack_plan(slack)[0] == "Task #1: Announce the launch (paused by Ana)"
        await slack.command("/task", "resume")
        assert slack_speakers(slack) == ["Nova", "Nova", "Sage", "Rex", "Rex"]  # the steps, then Rex's answer
        assert slack_plan(slack)[0] == "Task #1: Announce the launch (completed)"
        assert slack_plan(slack)[-1] == "Done: all 3 steps completed."


async def test_slack_takeover_hands_over_the_context_privately_and_cancel_rejects_pending_approvals(
    slack: SlackHarness,
) -> None:
    await slack.command("/task", STEERED)
    await slack.command("/task", "takeover I know the reactions")
    context = slack.replies_to_command()[-1]
    assert context["response_type"] == "ephemeral"
    assert unescape_from_slack(context["text"]).splitlines()[-3:] == [
        "Left to you (/task done N [result] as you finish each):",
        "- 2. research the reactions (after 1): research the reactions",
        "- 3. review them (after 2): review them",
    ]
    assert slack_plan(slack)[2:] == [
        "[ ] 2. research the reactions — with Ana (after 1)",
        "[ ] 3. review them — with Ana (after 2)",
    ]
    [request] = slack.approval_requests()
    await slack.click("approval_approve", request)
    await slack.command("/task", "done 2 Three happy customers")
    await slack.command("/task", "done 3")
    assert "Sage" not in slack_speakers(slack) and "Rex" not in slack_speakers(slack)
    assert slack_plan(slack)[0] == "Task #1: Announce the launch (completed)"
    assert slack_plan(slack)[-1] == "Done: all 3 steps completed. Who did what: Nova 1; Ana 2, 3."

    await slack.command("/task", f"Announce the beta; review it {ACT}")
    await slack.command("/task", "cancel the beta slipped")
    assert slack.replies_to_command()[-1]["text"] == (
        "Task #2 is cancelled (the beta slipped). Rejected its pending approvals: #2."
    )
    [_, second] = slack.approval_requests()
    shown = [u["text"] for u in slack.updates() if u["ts"] == second["ts"]]
    assert shown and "Rejected by Ana: the beta slipped" in unescape_from_slack(shown[-1])
    [plan_two] = [c for c in slack.fake.calls_to("chat.postMessage") if c.args["text"] == "Task #2 (planning)"]
    final = unescape_from_slack(slack.fake.messages[(CHANNEL, plan_two.answer["ts"])]["text"]).splitlines()
    assert final[-1] == (
        "Cancelled by Ana: the beta slipped. Its pending approvals are rejected: #2. 0 of 2 steps completed, 1 failed."
    )
    assert len(slack.posts_to("news")) == 1  # task #1's approved post; task #2's rejected one never ran


# -- Discord -----------------------------------------------------------------------------------------


async def command(fake: FakeDiscord, bot: DiscordBot, text: str, user: p.Payload | None = None) -> dict[str, Any]:
    """/task TEXT typed on Discord; the private answer it got."""
    asked = await fake.send_slash_command("task", {"text": text}, permissions=p.MEMBER_PERMISSIONS, user=user)
    [answer] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
    await settle(bot)
    return answer.json


def discord_plan(fake: FakeDiscord, number: int = 1) -> list[str]:
    """The plan message as it reads now (the one message of the task's with a line per step)."""
    [text] = [
        m["content"]
        for m in fake.messages.values()
        if m["content"].startswith(f"Task #{number}:") and "\n" in m["content"]
    ]
    return str(text).splitlines()


def discord_speakers(fake: FakeDiscord) -> list[str]:
    general = {str(i) for i, w in fake.webhooks.items() if w["channel_id"] == str(p.TEXT_CHANNEL_ID)}
    here = [c for c in fake.webhook_executes() if c.path.split("/")[2] in general]
    return [c.json["username"] for c in here if c.json.get("username") in ("Nova", "Sage", "Rex")]


async def approve_on_discord(fake: FakeDiscord, bot: DiscordBot, approval_id: int) -> None:
    [message_id] = [i for i, m in fake.messages.items() if f"**Approval #{approval_id}**" in m["content"]]
    await fake.click_button(message_id, f"approval:{approval_id}:approve", clicker=p.user(p.OWNER_USER_ID, "Owner"))
    await fake.wait_for_calls(
        "PATCH", rf"{MESSAGES}/{message_id}", where=lambda c: "executed" in c.json.get("content", "")
    )
    await settle(bot)


async def test_discord_a_paused_task_stays_paused_across_a_restart_and_a_stranger_may_not_steer_it(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await command(fake, bot, STEERED)
        refused = await command(fake, bot, "takeover", user=STRANGER_ON_DISCORD)
        paused = await command(fake, bot, "pause")
        await approve_on_discord(fake, bot, 1)
        assert discord_speakers(fake) == ["Nova", "Nova"]  # her step and her follow-up; Sage's step waits
    assert refused["flags"] == 64
    assert refused["content"] == "Only the task's requester or an approver can take over task #1."
    assert paused["flags"] == 64 and paused["content"].startswith("Task #1 pauses")
    assert discord_plan(fake)[0] == "Task #1: Announce the launch (paused by Ana)"

    async with open_bot(sections=APPROVERS) as bot:  # a restart: still paused
        await settle(bot)
        assert discord_speakers(fake) == ["Nova", "Nova"]
        await command(fake, bot, "resume", user=p.user(p.OWNER_USER_ID, "Owner"))  # an approver may
    assert discord_speakers(fake) == ["Nova", "Nova", "Sage", "Rex", "Rex"]  # the steps, then Rex's answer
    assert discord_plan(fake)[-1] == "Done: all 3 steps completed."


async def test_discord_takeover_hands_over_the_context_privately_and_cancel_rejects_pending_approvals(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await command(fake, bot, STEERED)
        context = await command(fake, bot, "takeover")
        assert context["flags"] == 64 and context["content"].startswith("You have task #1 now.")
        assert "- 3. review them (after 2): review them" in context["content"]
        assert discord_plan(fake)[3] == "[ ] 3. review them — with Ana (after 2)"
        await approve_on_discord(fake, bot, 1)
        await command(fake, bot, "done 2 Three happy customers")
        await command(fake, bot, "done 3 Looks fine")
        assert discord_plan(fake)[-1] == "Done: all 3 steps completed. Who did what: Nova 1; Ana 2, 3."
        assert discord_speakers(fake) == ["Nova", "Nova", "Nova"]  # her step, her follow-up, then her answer

        await command(fake, bot, f"Announce the beta; review it {ACT}")
        cancelled = await command(fake, bot, "cancel the beta slipped")
    assert cancelled["content"] == "Task #2 is cancelled (the beta slipped). Rejected its pending approvals: #2."
    [request] = [m for m in fake.messages.values() if "**Approval #2**" in m["content"]]
    assert "Rejected by Ana: the beta slipped" in request["content"] and request["components"] == []
    assert discord_plan(fake, 2)[-1].startswith(
        "Cancelled by Ana: the beta slipped. Its pending approvals are rejected"
    )
