"""[View] and Revise on Slack (the real bolt app, signed requests, the fake Web API) and on Discord (the
real discord.py client against the fake REST and gateway). The console: tests/test_approval_revisions.py."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from bot.revisions import arguments_json, full_arguments
from bot.slack.text import unescape_from_slack
from storage import approvals
from storage.records import ApprovalStatus
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord, RecordedCall
from tests.fakes.slack_api import TEAM_ID
from tests.fakes.slack_payloads import CHANNEL, HUMAN, buttons_of
from tests.slack_harness import APPROVER, SlackHarness, StartSlack

LONG = "Launch notes: " + " ".join(f"item {n} shipped;" for n in range(150))  # 2,603 characters
ASKED = {"channel": "news", "text": LONG}
EDITED = {"channel": "news", "text": "We launched today, at 9!"}
REQUEST = f"Nova, publish it. !!act publish_post {json.dumps(ASKED)}"
THREAD = "1700000000.000100"


def without_fences(blocks: list[str]) -> str:
    """The text a run of code blocks shows, joined back together."""
    return "".join(block.removeprefix("```\n").removesuffix("```") for block in blocks)


# -- Slack -------------------------------------------------------------------------------------------


async def slack_request(slack: SlackHarness, request: str = REQUEST) -> tuple[dict[str, Any], int]:
    await slack.say(request, "1700000030.000200", thread_ts=THREAD)
    [message] = slack.approval_requests()
    [pending] = await approvals.pending(slack.bot.roundtable.db)
    return message, pending.id


async def test_slack_view_shows_the_clicker_alone_the_whole_arguments(slack: SlackHarness) -> None:
    request, approval_id = await slack_request(slack)
    assert [b["action_id"] for b in buttons_of(request)][-2:] == ["approval_view", "approval_revise"]
    assert LONG not in json.dumps(request["blocks"])  # the request itself shows a clipped text

    await slack.click("approval_view", request, user=HUMAN)
    [refused] = slack.ephemerals()
    assert (refused["user"], refused["text"]) == (
        HUMAN,
        f"Only approvers can see the full arguments of #{approval_id}.",
    )

    await slack.click("approval_view", request)
    shown = slack.ephemerals()[1:]
    approval = await approvals.get(slack.bot.roundtable.db, approval_id)
    assert approval is not None
    assert shown and {(e["user"], e["channel"], e["thread_ts"]) for e in shown} == {(APPROVER, CHANNEL, THREAD)}
    assert without_fences([unescape_from_slack(e["text"]) for e in shown]) == full_arguments(approval, "Nova")
    assert LONG in without_fences([e["text"] for e in shown])
    assert slack.posts_to("news") == [] and approval.status is ApprovalStatus.PENDING


async def test_slack_revise_opens_a_modal_and_its_submission_runs_the_edit_once(slack: SlackHarness) -> None:
    request, approval_id = await slack_request(slack)

    await slack.click("approval_revise", request, user=HUMAN)  # not an approver: no modal
    await slack.click("approval_revise", request)
    [opened] = [call.args for call in slack.fake.calls_to("views.open")]
    view = opened["view"]
    assert (opened["trigger_id"], view["callback_id"], view["private_metadata"]) == (
        "trigger.click.2",
        "approval_revise_modal",
        str(approval_id),
    )
    field = view["blocks"][0]["element"]
    assert (field["type"], field["initial_value"]) == ("plain_text_input", arguments_json(ASKED))

    status, body = await slack.submit_view(view, '{"channel": "news", "text": ')
    assert status == 200 and json.loads(body) == {
        "response_action": "errors",
        "errors": {"arguments": "The arguments are not valid JSON (Expecting value at line 1, column 28)."},
    }
    _, body = await slack.submit_view(view, json.dumps({"channel": "news", "txt": "hi"}))
    assert json.loads(body)["errors"]["arguments"].startswith("Bad arguments for publish_post: text: Field required")
    still = await approvals.get(slack.bot.roundtable.db, approval_id)
    assert still is not None and still.status is ApprovalStatus.PENDING and still.args == ASKED

    status, body = await slack.submit_view(view, json.dumps(EDITED, indent=2))
    assert status == 200 and body == ""  # the modal closes
    await slack.submit_view(view, json.dumps({"channel": "news", "text": "Once more"}))  # a stale second submit

    [published] = slack.posts_to("news")
    assert (published["username"], published["text"]) == ("Nova", "We launched today, at 9!")
    [update] = slack.updates()
    assert update["text"].startswith(f"Approval #{approval_id}: Approved by <@{APPROVER}> at <!date^")
    assert update["text"].endswith("with edited arguments, executed: posted in #news")
    assert "We launched today, at 9!" in json.dumps(update["blocks"]) and LONG not in json.dumps(update["blocks"])
    assert buttons_of(update) == []
    assert [e["text"] for e in slack.ephemerals()] == [
        f"Only approvers can decide; #{approval_id} stays pending.",
        f"Approval #{approval_id} was already decided (executed).",
    ]
    done = await approvals.get(slack.bot.roundtable.db, approval_id)
    assert done is not None and (done.status, done.args, done.original_args) == (
        ApprovalStatus.EXECUTED,
        EDITED,
        ASKED,
    )
    events = [(e.event, e.actor) for e in await approvals.audit_events(slack.bot.roundtable.db)]
    assert events == [("requested", "nova"), ("approved", "Bea"), ("executed", None)]


async def test_slack_arguments_too_long_for_a_form_are_answered_privately(start_slack: StartSlack) -> None:
    longer = {"channel": "news", "text": "x" * 3100}
    async with start_slack() as slack:
        request, approval_id = await slack_request(slack, f"Nova, publish it. !!act publish_post {json.dumps(longer)}")
        await slack.click("approval_revise", request)

    assert slack.fake.calls_to("views.open") == []
    [told] = slack.ephemerals()
    assert told["user"] == APPROVER and told["text"].startswith(
        f"The arguments of #{approval_id} are too long for a Slack form (3137 characters, the most is 3000)"
    )


async def test_slack_unreadable_view_and_revise_payloads_change_nothing(slack: SlackHarness) -> None:
    request, approval_id = await slack_request(slack)
    user = {"id": APPROVER, "username": "bea", "team_id": TEAM_ID}
    team = {"id": TEAM_ID, "domain": "fake"}
    modal = {"type": "modal", "callback_id": "approval_revise_modal"}
    unreadable = [
        {
            "type": "block_actions",
            "user": user,
            "team": team,
            "actions": [{"action_id": "approval_view", "value": "?"}],
        },
        {
            "type": "block_actions",
            "team": team,
            "actions": [{"action_id": "approval_revise", "value": str(approval_id)}],
        },
        {"type": "view_submission", "user": user, "team": team, "view": modal},
        {
            "type": "view_submission",
            "user": user,
            "team": team,
            "view": {**modal, "private_metadata": str(approval_id)},
        },
    ]
    answers = [
        await slack.post_signed(urlencode({"payload": json.dumps(u)}), "application/x-www-form-urlencoded")
        for u in unreadable
    ]
    await slack.bot.wait_idle()

    assert [status for status, _ in answers] == [200] * 4
    assert json.loads(answers[-1][1])["errors"]["arguments"].startswith("The arguments are not valid JSON")  # no input
    assert slack.ephemerals() == [] and slack.fake.calls_to("views.open") == [] and slack.updates() == []
    still = await approvals.get(slack.bot.roundtable.db, approval_id)
    assert still is not None and still.status is ApprovalStatus.PENDING and still.args == ASKED


# -- Discord -----------------------------------------------------------------------------------------

APPROVERS = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}}}
NOT_AN_APPROVER = p.user(p.OWNER_USER_ID, "Owner")
TEXT = p.TEXT_CHANNEL_ID


async def discord_request(fake: FakeDiscord) -> tuple[int, int]:
    """(message id, approval id) of the request with buttons the bot posted in #general."""
    await fake.wait_for_calls("POST", rf"/channels/{TEXT}/messages", where=lambda c: bool(c.json.get("components")))
    [(message_id, message)] = [(i, m) for i, m in fake.messages.items() if m["components"]]
    return message_id, int(button_ids(message)[0].split(":")[1])


def button_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message["components"] for c in row["components"]]


async def answers_to(fake: FakeDiscord, interaction_id: int, count: int = 1) -> list[dict[str, Any]]:
    """The interaction's callback, then its followups, in order."""
    [callback] = await fake.wait_for_calls("POST", rf"/interactions/{interaction_id}/[^/]+/callback")
    followups: list[RecordedCall] = []
    if count > 1:
        followups = await fake.wait_for_calls(
            "POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{interaction_id}", count - 1
        )
    return [callback.json, *(call.json for call in followups)]


async def test_discord_view_answers_ephemerally_with_every_character(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(REQUEST)
        message_id, approval_id = await discord_request(fake)
        assert button_ids(fake.messages[message_id])[-2:] == [
            f"approval:{approval_id}:view",
            f"approval:{approval_id}:revise",
        ]
        assert LONG not in fake.messages[message_id]["content"]

        refused = await fake.click_button(message_id, f"approval:{approval_id}:view", clicker=NOT_AN_APPROVER)
        [refusal] = await answers_to(fake, refused)
        viewed = await fake.click_button(message_id, f"approval:{approval_id}:view")
        # The heading and the first lines, then the 2,603-character text cut in two: 2,000 at most each.
        first, *rest = await answers_to(fake, viewed, 3)
        await settle(bot)
        approval = await approvals.get(bot.app.db, approval_id)

    assert refusal["type"] == 4 and refusal["data"]["flags"] == 64
    assert refusal["data"]["content"] == f"Only approvers can see the full arguments of #{approval_id}."
    texts = [first["data"]["content"], *(followup["content"] for followup in rest)]
    assert first["type"] == 4 and first["data"]["flags"] == 64 and all(f["flags"] == 64 for f in rest)
    assert all(len(text) <= 2000 for text in texts)
    assert approval is not None and approval.status is ApprovalStatus.PENDING
    assert without_fences(texts) == full_arguments(approval, "Nova")


async def test_discord_revise_opens_a_form_and_its_submission_runs_the_edit(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(REQUEST)
        message_id, approval_id = await discord_request(fake)
        refused = await fake.click_button(message_id, f"approval:{approval_id}:revise", clicker=NOT_AN_APPROVER)
        [refusal] = await answers_to(fake, refused)
        clicked = await fake.click_button(message_id, f"approval:{approval_id}:revise")
        [form] = await answers_to(fake, clicked)
        assert form["type"] == 9  # MODAL
        [label] = form["data"]["components"]
        field = label["component"]
        assert (label["type"], field["type"], field["value"]) == (18, 4, arguments_json(ASKED))

        bad = await fake.submit_form(form["data"]["custom_id"], {field["custom_id"]: '{"channel": "news"}'})
        deferred, error = await answers_to(fake, bad, 2)
        unchanged = await approvals.get(bot.app.db, approval_id)
        # A submitted form closes, whatever it said: the approver opens Revise again.
        again = await fake.click_button(message_id, f"approval:{approval_id}:revise")
        [form] = await answers_to(fake, again)
        good = await fake.submit_form(form["data"]["custom_id"], {field["custom_id"]: json.dumps(EDITED)})
        [accepted] = await answers_to(fake, good)
        await fake.wait_for_calls(
            "PATCH", rf"/channels/{TEXT}/messages/{message_id}", where=lambda c: "executed" in c.json.get("content", "")
        )
        await settle(bot)
        done = await approvals.get(bot.app.db, approval_id)

    assert refusal["data"]["content"] == f"Only approvers can decide; #{approval_id} stays pending."
    assert deferred["type"] == 6 and error["flags"] == 64
    assert (
        error["content"]
        == f"Approval #{approval_id} is unchanged: bad arguments for publish_post: text: Field required."
    )
    assert unchanged is not None and unchanged.status is ApprovalStatus.PENDING and unchanged.args == ASKED
    assert accepted["type"] == 6
    news = {str(i) for i, w in fake.webhooks.items() if w["channel_id"] == str(p.NEWS_CHANNEL_ID)}
    published = [c.json for c in fake.webhook_executes() if c.path.split("/")[2] in news]
    assert [(m["username"], m["content"]) for m in published] == [("Nova", "We launched today, at 9!")]
    assert done is not None and (done.status, done.args, done.original_args) == (
        ApprovalStatus.EXECUTED,
        EDITED,
        ASKED,
    )
    assert fake.messages[message_id]["content"].splitlines()[-1] == (
        f"\N{WHITE HEAVY CHECK MARK} Approved by <@{p.HUMAN_USER_ID}> with edited arguments, executed: posted in #news"
    )
    assert "We launched today, at 9!" in fake.messages[message_id]["content"]  # the request shows what ran
