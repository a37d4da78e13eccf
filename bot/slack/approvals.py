"""Approval buttons, the "Reject with feedback" modal, and [View] and Revise.

Every listener acks at once and hands the work to SlackBot.work. The handlers use nothing but the
approval id in the payload, so buttons posted before a restart keep working. The channel service
decides who may decide and lets only the first decision count; here, a refusal ("only approvers",
"already decided") is told privately to whoever clicked, and a success shows when the port replaces
the buttons with the outcome. View answers the clicker alone (ephemeral messages) with the full
arguments; Revise opens a modal of the arguments as JSON, and its submission approves the edit. A
submission whose JSON the action's spec refuses is answered in the modal, before the ack."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.approval_desk import Actor, CommandReply
from bot.numbers import record_id
from bot.revisions import arguments_json, code_blocks, edited_arguments, read_arguments
from bot.slack.approval_blocks import (
    APPROVE_ACTION,
    APPROVE_ALWAYS_ACTION,
    CLOSE_ACTION,
    FEEDBACK_ACTION,
    FEEDBACK_BLOCK,
    FEEDBACK_INPUT,
    FEEDBACK_MODAL,
    REJECT_ACTION,
    RETRY_ACTION,
    REVISE_ACTION,
    REVISE_BLOCK,
    REVISE_INPUT,
    REVISE_MAX_CHARS,
    REVISE_MODAL,
    VIEW_ACTION,
    feedback_modal,
    revise_modal,
)
from bot.slack.port import request_location
from bot.slack.slack_bot import SlackBot, tell_privately
from storage import approvals as stored_approvals

# -- reading clicks and modal submissions ------------------------------------------------------------
# Interactivity payloads (button clicks, modal submissions) reduced to what the handlers need.
#
# Pure: no I/O. A payload that lacks something needed gives None, never an exception.


@dataclass(frozen=True)
class ButtonClick:
    approval_id: int
    user_id: str
    channel: str | None  # where the clicked message is, for a private answer
    thread: str | None
    trigger_id: str | None  # for views.open, valid for 3 seconds
    team_id: str | None = None  # the clicker's workspace
    workspace: str | None = None  # the workspace the click came from (the app's)


@dataclass(frozen=True)
class FeedbackSubmission:
    approval_id: int
    user_id: str
    comment: str  # what was typed: the feedback, or the Revise modal's JSON
    team_id: str | None = None
    workspace: str | None = None


def button_click(body: Mapping[str, Any]) -> ButtonClick | None:
    actions = body.get("actions")
    action = actions[0] if isinstance(actions, list) and actions else None
    approval_id = _approval_id(action.get("value") if isinstance(action, Mapping) else None)
    user_id = _user_id(body)
    if approval_id is None or user_id is None:
        return None
    container = _mapping(body.get("container"))
    channel = _mapping(body.get("channel")).get("id") or container.get("channel_id")
    thread = container.get("thread_ts") or _mapping(body.get("message")).get("thread_ts")
    trigger_id = body.get("trigger_id")
    return ButtonClick(
        approval_id=approval_id,
        user_id=user_id,
        team_id=_team_id(body),
        workspace=_workspace(body),
        channel=str(channel) if channel else None,
        thread=str(thread) if thread else None,
        trigger_id=str(trigger_id) if trigger_id else None,
    )


def feedback_submission(
    body: Mapping[str, Any], block: str = FEEDBACK_BLOCK, field: str = FEEDBACK_INPUT
) -> FeedbackSubmission | None:
    """A submitted modal: its approval, who submitted it, and the text typed into its one input."""
    view = _mapping(body.get("view"))
    approval_id = _approval_id(view.get("private_metadata"))
    user_id = _user_id(body)
    values = _mapping(_mapping(view.get("state")).get("values"))
    comment = _mapping(_mapping(values.get(block)).get(field)).get("value")
    if approval_id is None or user_id is None:
        return None
    return FeedbackSubmission(approval_id, user_id, str(comment or "").strip(), _team_id(body), _workspace(body))


def _approval_id(value: Any) -> int | None:
    return record_id(str(value).strip()) if isinstance(value, (str, int)) else None


def _user_id(body: Mapping[str, Any]) -> str | None:
    user_id = _mapping(body.get("user")).get("id")
    return str(user_id) if user_id else None


def _workspace(body: Mapping[str, Any]) -> str | None:
    team_id = _mapping(body.get("team")).get("id")
    return str(team_id) if team_id else None


def _team_id(body: Mapping[str, Any]) -> str | None:
    """The user's own workspace, else the one the payload came from."""
    team_id = _mapping(body.get("user")).get("team_id") or _mapping(body.get("team")).get("id")
    return str(team_id) if team_id else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# -- the buttons, the modal and the decisions ----------------------------------------------------

log = logging.getLogger(__name__)

Listener = Callable[..., Any]
VIEW_PIECE_CHARS = 3000  # of the full arguments per private message (escaped, far below Slack's 40,000)


def register(bot: SlackBot) -> None:
    bot.bolt.action(APPROVE_ACTION)(_on_button(bot, partial(decide_click, approve=True), "slack approval"))
    bot.bolt.action(APPROVE_ALWAYS_ACTION)(
        _on_button(bot, partial(decide_click, approve=True, always=True), "slack approval")
    )
    bot.bolt.action(REJECT_ACTION)(_on_button(bot, partial(decide_click, approve=False), "slack approval"))
    bot.bolt.action(FEEDBACK_ACTION)(_on_button(bot, open_feedback_modal, "slack feedback form"))
    bot.bolt.view(FEEDBACK_MODAL)(_on_feedback_submitted(bot))
    bot.bolt.action(VIEW_ACTION)(_on_button(bot, show_arguments, "slack approval view"))
    bot.bolt.action(REVISE_ACTION)(_on_button(bot, open_revise_modal, "slack revise form"))
    bot.bolt.view(REVISE_MODAL)(_on_revision_submitted(bot))
    bot.bolt.action(RETRY_ACTION)(_on_button(bot, partial(settle_click, retry=True), "slack run again"))
    bot.bolt.action(CLOSE_ACTION)(_on_button(bot, partial(settle_click, retry=False), "slack close"))


def _on_button(
    bot: SlackBot, handle: Callable[[SlackBot, ButtonClick], Coroutine[Any, Any, None]], name: str
) -> Listener:
    """A button's listener: ack at once, then `handle` the click as the bot's own work."""

    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = button_click(body)
        if click is None:
            log.warning("%s payload without an approval id or user ignored", name)
            return
        bot.work.start(handle(bot, click), name=f"{name} {click.approval_id}")

    return on_click


def _on_feedback_submitted(bot: SlackBot) -> Listener:
    async def on_submit(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()  # closes the modal
        submission = feedback_submission(body)
        if submission is None:
            log.warning("feedback modal submission without an approval id or user ignored")
            return
        bot.work.start(decide_feedback(bot, submission), name=f"slack feedback {submission.approval_id}")

    return on_submit


def _on_revision_submitted(bot: SlackBot) -> Listener:
    async def on_submit(ack: AsyncAck, body: dict[str, Any]) -> None:
        submission = feedback_submission(body, REVISE_BLOCK, REVISE_INPUT)
        if submission is None:
            await ack()
            log.warning("revise modal submission without an approval id or user ignored")
            return
        problem = await _revision_problem(bot, submission)
        if problem is not None:  # the modal stays open, the error under the JSON; nothing changed
            await ack(response_action="errors", errors={REVISE_BLOCK: problem[:2000]})
            return
        await ack()  # closes the modal
        bot.work.start(revise(bot, submission), name=f"slack revise {submission.approval_id}")

    return on_submit


async def _revision_problem(bot: SlackBot, submission: FeedbackSubmission) -> str | None:
    """What is wrong with the edited JSON, in one line; None when it reads and the action's spec takes
    it (who may decide, and whether it is still pending, the service checks when it decides)."""
    args = read_arguments(submission.comment)
    if isinstance(args, str):
        return args[0].upper() + args[1:] + "."
    try:
        approval = await stored_approvals.get(bot.roundtable.db, submission.approval_id)
    except Exception:  # the modal closes; the service answers once the database does
        log.exception("could not read approval %s to check its edited arguments", submission.approval_id)
        return None
    persona = bot.roundtable.service.personas.get(approval.persona_id) if approval else None
    tools = bot.roundtable.engine.runner.tools
    checked = edited_arguments(approval, persona, args, tools) if approval and persona else None
    return checked[0].upper() + checked[1:] + "." if isinstance(checked, str) else None


async def show_arguments(bot: SlackBot, click: ButtonClick) -> None:
    """The full arguments, to the clicker alone, in as many messages as they need (never cut)."""
    actor = Actor(click.user_id, await bot.names.name_of(click.user_id), click.team_id)
    service = bot.roundtable.service
    reply = await service.approval_desk.show_arguments(
        click.approval_id, actor, decided_in=_approvals_key(bot, click.workspace)
    )
    if click.channel is None:
        return
    texts = code_blocks(reply.reply, VIEW_PIECE_CHARS) if reply.ok else [reply.reply]
    for text in texts:
        await tell_privately(bot.bolt.client, click.channel, click.user_id, text, click.thread)


async def open_revise_modal(bot: SlackBot, click: ButtonClick) -> None:
    """The Revise modal, unless the clicker could not decide anyway or the JSON would not fit a form."""
    problem = await why_not(bot, click)
    approval = await stored_approvals.get(bot.roundtable.db, click.approval_id) if problem is None else None
    if approval is not None and len(arguments_json(approval.args)) > REVISE_MAX_CHARS:
        problem = (
            f"The arguments of #{approval.id} are too long for a Slack form ({len(arguments_json(approval.args))} "
            f"characters, the most is {REVISE_MAX_CHARS}): revise them with @Roundtable /revise {approval.id} {{json}}."
        )
    if problem is not None or approval is None:
        if click.channel and problem:
            await tell_privately(bot.bolt.client, click.channel, click.user_id, problem, click.thread)
        return
    await _open_modal(bot, click, revise_modal(approval))


async def revise(bot: SlackBot, submission: FeedbackSubmission) -> None:
    actor = Actor(submission.user_id, await bot.names.name_of(submission.user_id), submission.team_id)
    args = read_arguments(submission.comment)
    if isinstance(args, str):  # checked before the ack; kept for a submission that changed meanwhile
        return
    reply = await bot.roundtable.service.approval_desk.revise(
        submission.approval_id, actor, args, decided_in=_approvals_key(bot, submission.workspace)
    )
    if not reply.ok:
        await _tell_where_requested(bot, submission, reply.reply)


async def decide_click(bot: SlackBot, click: ButtonClick, approve: bool, always: bool = False) -> None:
    reply = await _decide(bot, click.approval_id, click.user_id, click.team_id, click.workspace, approve, always=always)
    if not reply.ok and click.channel:
        await tell_privately(bot.bolt.client, click.channel, click.user_id, reply.reply, click.thread)


async def settle_click(bot: SlackBot, click: ButtonClick, retry: bool) -> None:
    """[Run again] or [Close] on an unknown outcome: as /approvals retry or close, once, whoever clicks
    how often; the clicker alone hears how it went (the request shows the outcome once it is known)."""
    actor = Actor(click.user_id, await bot.names.name_of(click.user_id), click.team_id)
    reply = await bot.roundtable.service.approval_desk.settle_unknown(click.approval_id, actor, retry)
    if click.channel:
        await tell_privately(bot.bolt.client, click.channel, click.user_id, reply.reply, click.thread)


async def open_feedback_modal(bot: SlackBot, click: ButtonClick) -> None:
    """The modal, unless the clicker could not decide anyway (then they are told why at once)."""
    refusal = await why_not(bot, click)
    if refusal is not None:
        if click.channel:
            await tell_privately(bot.bolt.client, click.channel, click.user_id, refusal, click.thread)
        return
    await _open_modal(bot, click, feedback_modal(click.approval_id))


async def _open_modal(bot: SlackBot, click: ButtonClick, view: dict[str, Any]) -> None:
    if click.trigger_id is None:
        log.warning("a button of approval %s came without a trigger_id", click.approval_id)
        return
    try:
        await bot.bolt.client.views_open(trigger_id=click.trigger_id, view=view)
    except SlackClientError as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
        log.warning("views.open for approval %s failed: %s", click.approval_id, error)


async def decide_feedback(bot: SlackBot, submission: FeedbackSubmission) -> None:
    reply = await _decide(
        bot,
        submission.approval_id,
        submission.user_id,
        submission.team_id,
        submission.workspace,
        False,
        submission.comment,
    )
    if not reply.ok:
        await _tell_where_requested(bot, submission, reply.reply)


async def _tell_where_requested(bot: SlackBot, submission: FeedbackSubmission, text: str) -> None:
    """A modal has no channel of its own: answer where the request's buttons are."""
    approval = await stored_approvals.get(bot.roundtable.db, submission.approval_id)
    channel, thread = request_location(approval, bot.settings.approvals_channel) if approval else (None, None)
    if channel:
        await tell_privately(bot.bolt.client, channel, submission.user_id, text, thread)


async def why_not(bot: SlackBot, click: ButtonClick) -> str | None:
    """Why the clicker cannot decide this approval now; None when they can. Only a courtesy before
    the modal: the approvals core checks again when the submission arrives."""
    clicker = Actor(click.user_id, click.user_id, click.team_id)  # who may decide goes by id and team
    return await bot.roundtable.service.approval_desk.why_not(
        click.approval_id, clicker, decided_in=_approvals_key(bot, click.workspace)
    )


async def _decide(
    bot: SlackBot,
    approval_id: int,
    user_id: str,
    team_id: str | None,
    workspace: str | None,
    approve: bool,
    comment: str = "",
    *,
    always: bool = False,
) -> CommandReply:
    actor = Actor(user_id, await bot.names.name_of(user_id), team_id)
    return await bot.roundtable.service.approval_desk.decide(
        approval_id, actor, approve, comment, decided_in=_approvals_key(bot, workspace), always=always
    )


def _approvals_key(bot: SlackBot, workspace: str | None) -> str | None:
    """The Slack channel where requests from other platforms are shown, as a channel key."""
    channel = bot.settings.approvals_channel.lstrip("#")
    return f"slack:{workspace}:{channel}" if workspace and channel else None
