"""Approvers are matched on team and user: a Slack user id means nothing without its workspace.

"UAPPROVER" in [approvals] approvers is UAPPROVER of the channel's own workspace; "T0PARTNER:UGUEST"
is UGUEST of workspace T0PARTNER (say, a Slack Connect guest). Clicks and typed commands go over
signed HTTP to the real bolt app (tests/test_slack.py's harness).
"""

from __future__ import annotations

from typing import Any

import pytest

from storage.records import ApprovalStatus
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_payloads import CHANNEL, button_click, message
from tests.slack_harness import APPROVER, SlackHarness, StartSlack
from tests.test_slack import THREAD, request_publication, status_of

OTHER_TEAM = "T0OTHER"
PARTNER = "T0PARTNER"
GUEST = "UGUEST"
APPROVERS = {"approvals": {"approvers": {"slack": [APPROVER, f"{PARTNER}:{GUEST}"]}}}
REFUSAL = "Only approvers can decide; #{} stays pending."


def click_as(slack: SlackHarness, request: dict[str, Any], user: str, team: str) -> dict[str, Any]:
    """`user` of workspace `team` clicks Approve (in a shared channel, the payload names their own team)."""
    payload = button_click(request, "approval_approve", user, response_url=slack.fake.response_url("c"), trigger="t.1")
    return {**payload, "user": {**payload["user"], "team_id": team}, "team": {"id": team, "domain": team.lower()}}


async def test_a_same_id_user_from_another_team_is_refused(start_slack: StartSlack) -> None:  # noqa: F811
    async with start_slack(APPROVERS) as slack:
        request, pending = await request_publication(slack)

        assert await slack.interact(click_as(slack, request, APPROVER, OTHER_TEAM)) == 200
        assert await slack.interact(click_as(slack, request, GUEST, TEAM_ID)) == 200  # listed only for T0PARTNER
        assert [(e["user"], e["text"]) for e in slack.ephemerals()] == [
            (APPROVER, REFUSAL.format(pending.id)),
            (GUEST, REFUSAL.format(pending.id)),
        ]
        assert await status_of(slack, pending) is ApprovalStatus.PENDING and slack.posts_to("news") == []

        assert await slack.interact(click_as(slack, request, GUEST, PARTNER)) == 200
        assert [p["text"] for p in slack.posts_to("news")] == ["We launched!"]
        assert await status_of(slack, pending) is ApprovalStatus.EXECUTED


@pytest.mark.parametrize("team, decided", [(OTHER_TEAM, False), (TEAM_ID, True)])
async def test_a_typed_approve_counts_only_from_the_approvers_own_team(
    start_slack: StartSlack,
    team: str,
    decided: bool,  # noqa: F811
) -> None:
    async with start_slack(APPROVERS) as slack:
        _, pending = await request_publication(slack)
        typed = message(
            f"<@{BOT_USER_ID}> /approve {pending.id}",
            "1700000300.000100",
            user=APPROVER,
            user_team=team,
            thread_ts=THREAD,
        )
        assert await slack.send_event({**typed, "type": "app_mention"}, "EvTypedApprove") == 200
        await slack.bot.wait_idle()

        expected = ApprovalStatus.EXECUTED if decided else ApprovalStatus.PENDING
        assert await status_of(slack, pending) is expected
        if not decided:
            [refusal] = slack.ephemerals()
            assert (refusal["user"], refusal["channel"], refusal["text"]) == (
                APPROVER,
                CHANNEL,
                REFUSAL.format(pending.id),
            )


async def test_the_approvers_are_mentioned_by_user_id_whatever_their_team(start_slack: StartSlack) -> None:  # noqa: F811
    async with start_slack(APPROVERS) as slack:
        await slack.bot.roundtable.service.port.notify_approvers(
            f"slack:{TEAM_ID}:{CHANNEL}", "three failures in a row"
        )
        await slack.bot.wait_idle()  # the outbox sends it

        [alert] = slack.posts()
        assert alert["text"] == f"<@{APPROVER}> <@{GUEST}> For the approvers: three failures in a row"
