"""SlackPort: the outbound port, posting through chat.postMessage under each persona's name and icon.

Approval requests are Block Kit messages with buttons (approval_blocks.py); where each one was
posted is remembered (bot/request_places.py) so that show_decision can replace its buttons with
chat.update, also after a restart."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.avatars import slack_icon_emoji
from bot.config import Config
from bot.plan_message import fit_plan, plan_message_id, plan_message_place
from bot.port import PostFailed, note_piece, sending
from bot.request_places import Place, RequestPlaces
from bot.settings import slack_approver
from bot.slack.action_posts import action_metadata, posted_pieces
from bot.slack.action_targets import ActionFailed, is_user_id, target_of
from bot.slack.approval_blocks import decision_blocks, outcome_text, request_blocks, request_text
from bot.slack.delivery import failure_of, is_gone, outbox_metadata, posted_before, shows_already
from bot.slack.inbound import message_of
from bot.slack.keys import channel_id_of, channel_key_of, thread_ts_of
from bot.slack.post_removal import PostNotFound, delete_post
from bot.slack.slack_bot import UserNames
from bot.slack.text import escape_clipped, escape_for_slack, slack_messages
from graph.action_marks import current_run
from graph.actions import ActionCall
from graph.observe import DELIVERY_FAILURES
from personas import Persona
from storage.database import Database
from storage.records import Approval, ApprovalStatus

# -- where approval requests are posted --------------------------------------------------------------
# Where approval requests are posted. Where each one was posted is kept in bot/request_places.py
# (one table for every platform), so its buttons can be replaced (chat.update) after a restart, or
# by another process sharing the database.

log = logging.getLogger(__name__)


def request_location(approval: Approval, approvals_channel: str) -> tuple[str | None, str | None]:
    """(channel, thread) for an approval's request: the [slack] approvals_channel when set,
    else the thread of the request in its own channel. channel is None for a non-Slack key."""
    if approvals_channel:
        return approvals_channel.lstrip("#"), None
    return channel_id_of(approval.channel_key), approval.thread


# -- the port -----------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

NOTICE_NAME = "Roundtable"
PLATFORM = "slack"

_DELIVERY_ERRORS = (SlackClientError, aiohttp.ClientError, TimeoutError)
_NO_DECIDER = (ApprovalStatus.PENDING, ApprovalStatus.EXPIRED)
PLAN_CHARS = 4_000  # Slack asks for message text under 4,000 characters

ApproversFor = Callable[[str], set[str]]


def persona_identity(persona: Persona) -> dict[str, str]:
    """username plus icon_url, or icon_emoji for a `:shortcode:` or a unicode emoji ("🎨" is `:art:`)."""
    identity = {"username": persona.display_name}
    if persona.avatar_is_url:
        identity["icon_url"] = persona.avatar
    elif icon := slack_icon_emoji(persona.avatar):
        identity["icon_emoji"] = icon
    return identity


def _nobody(channel_key: str) -> set[str]:
    return set()


def slack_port(
    config: Config, client: AsyncWebClient, db: Database | None = None, *, approvals_channel: str | None = None
) -> SlackPort:
    """The port with the approval settings of config.toml (the approvals channel as resolved to its ID,
    when given); request places are stored in `db`."""
    return SlackPort(
        client,
        approvals_channel=config.settings.slack.approvals_channel if approvals_channel is None else approvals_channel,
        approvers_for=config.settings.approvals.approvers_for,
        places=RequestPlaces(PLATFORM, db),
        thinking_reaction=config.settings.slack.thinking_reaction,
    )


class SlackPort:
    """Delivery failures (not_in_channel, ratelimited after retries, invalid_auth) are logged; they are
    raised as PostFailed only while the outbox sends (bot/outbox.py), which tries again or gives up.
    A direct call never fails the round or the service. `execute` raises, because its caller records
    the action as failed and tells the persona why.

    Every message the outbox sends carries Slack message metadata naming its entry and piece; when an
    earlier attempt's outcome is unknown (the process died during it), conversations.history (or
    conversations.replies in a thread) is read first, and a piece found there is not posted again."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        approvals_channel: str = "",
        approvers_for: ApproversFor = _nobody,
        places: RequestPlaces | None = None,
        thinking_reaction: str = "",
    ) -> None:
        self.client = client
        self.thinking_reaction = thinking_reaction.strip(":")
        self.approvals_channel = approvals_channel
        self.approvers_for = approvers_for
        self.places = places or RequestPlaces(PLATFORM)
        self.names = UserNames(client)

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        await self._send(channel_key, slack_messages(text), thread, persona_identity(persona))

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        await self._send(channel_key, slack_messages(text), thread, {"username": NOTICE_NAME})

    async def trace(self, channel_key: str, text: str) -> None:
        log.debug("trace %s: %s", channel_key, text)

    @asynccontextmanager
    async def typing(self, channel_key: str, persona: Persona) -> AsyncIterator[None]:
        yield  # Slack has no typing indicator for apps; a reaction marks the message being answered

    @asynccontextmanager
    async def answering(self, channel_key: str, event_id: str | None) -> AsyncIterator[None]:
        """[slack] thinking_reaction on the human message while its round runs."""
        message = message_of(event_id) if self.thinking_reaction else None
        if message is None:
            yield
            return
        channel, ts = message
        marked = await self._react("reactions_add", channel, ts)
        try:
            yield
        finally:
            if marked:
                await self._react("reactions_remove", channel, ts)

    async def _react(self, method: str, channel: str, ts: str) -> bool:
        try:
            await getattr(self.client, method)(channel=channel, timestamp=ts, name=self.thinking_reaction)
        except _DELIVERY_ERRORS as exc:
            log.info("%s on %s failed: %s", method, channel, _describe(exc))
            return False
        return True

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        """A context block: small grey text under the conversation."""
        channel = channel_id_of(channel_key)
        if channel is None:
            return
        shown = escape_clipped(text, 2900)
        context = {"type": "context", "elements": [{"type": "mrkdwn", "text": shown}]}
        await self._post_message(
            channel_key, channel, thread or thread_ts_of(channel_key), {"text": shown, "blocks": [context]}
        )

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        """chat.update of the plan message `shown_as`; a new message (under the bot's name) when there is none
        yet or it is gone. An update that fails otherwise keeps the message: the next update brings it current."""
        channel = channel_id_of(channel_key)
        if channel is None:
            log.warning("not a Slack channel key, plan not shown: %s", channel_key)
            return None
        shown = fit_plan(text, PLAN_CHARS, escape_for_slack)
        thread = thread or thread_ts_of(channel_key)
        if place := plan_message_place(shown_as):
            try:
                if not await shows_already(self.client, sending(), place[0], place[1], thread, shown):
                    await self.client.chat_update(channel=place[0], ts=place[1], text=shown)
                return shown_as
            except _DELIVERY_ERRORS as exc:
                log.warning("chat.update of the plan in %s failed: %s", channel_key, _describe(exc))
                if not is_gone(exc):
                    if sending() is not None:
                        raise failure_of(exc) from None
                    return shown_as
        ref = await self._post_message(channel_key, channel, thread, {"text": shown})
        return plan_message_id(ref.channel, ref.message) if ref is not None and ref.message else None

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        """Mentions only the configured approvers' user ids; the text itself is escaped, so it cannot ping."""
        mentions = " ".join(f"<@{user}>" for user in self._approver_ids(channel_key))
        pieces = slack_messages(f"For the approvers: {text}")
        if mentions and pieces:
            pieces[0] = f"{mentions} {pieces[0]}"
        if self.approvals_channel:  # where the approvers look: approval requests are posted there too
            channel = self.approvals_channel.lstrip("#")
            await self._send_pieces(channel_key, channel, None, pieces, {"username": NOTICE_NAME})
            return
        try:
            await self._send(channel_key, pieces, None, {"username": NOTICE_NAME})
        except PostFailed as failure:
            if not failure.permanent or not await self._tell_each_approver(channel_key, text):
                raise

    async def _tell_each_approver(self, channel_key: str, text: str) -> bool:
        """The channel is gone or closed to the app: each approver is told in the app's direct messages,
        the `D…` conversation conversations.open gives (a post to a `U…` id with a custom username lands
        in the person's Slackbot DM instead: https://docs.slack.dev/reference/methods/chat.postMessage,
        "Direct messages"). One approver who cannot be told is logged; the others still are. True when
        at least one of them was."""
        told = False
        for user in self._approver_ids(channel_key):
            try:
                opened = await self.client.conversations_open(users=user)
                dm = str((opened.get("channel") or {}).get("id") or "")
                for piece in slack_messages(f"For the approvers ({channel_key}): {text}"):
                    await self.client.chat_postMessage(channel=dm, text=piece, username=NOTICE_NAME)
                    told = True
            except _DELIVERY_ERRORS as exc:
                DELIVERY_FAILURES.labels("slack").inc()
                log.warning("the approver %s could not be told directly: %s", user, _describe(exc))
        return told

    # -- approvals -------------------------------------------------------------------------------

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        channel, thread = request_location(approval, self.approvals_channel)
        if channel is None:
            log.warning("approval %s is not for a Slack channel: %s", approval.id, approval.channel_key)
            return
        message = {
            "text": request_text(approval, persona),
            "blocks": request_blocks(approval, persona, name_the_channel=bool(self.approvals_channel)),
        }
        ref = await self._post_message(approval.channel_key, channel, thread, message)
        if ref is not None:
            await self.places.remember(approval.id, ref)

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        """Nothing in the channel: the audit log holds it ([actions] announce_immediate says it there)."""

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        """Replace the request's buttons with the outcome; without a known request message, post the outcome."""
        outcome = outcome_text(approval, await self._decider(approval))
        message: dict[str, Any] = {
            "text": f"Approval #{approval.id}: {outcome}",
            "blocks": decision_blocks(approval, persona, outcome, name_the_channel=bool(self.approvals_channel)),
        }
        ref = await self.places.place(approval.id)
        channel, thread = request_location(approval, self.approvals_channel)
        if ref is not None:
            try:
                if not await shows_already(self.client, sending(), ref.channel, ref.message, thread, message["text"]):
                    await self.client.chat_update(
                        channel=ref.channel, ts=ref.message, text=message["text"], blocks=message["blocks"]
                    )
                return
            except _DELIVERY_ERRORS as exc:
                log.warning("chat.update of approval %s failed: %s", approval.id, _describe(exc))
                if sending() is not None and not is_gone(exc):
                    raise failure_of(exc) from None
        if channel is not None:
            await self._post_message(approval.channel_key, channel, thread, message)

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        target = target_of(call)
        identity = persona_identity(persona)
        run = current_run()  # the approval it runs for: each piece is marked as its (bot/slack/action_posts.py)
        if call.name == "delete_post":
            try:
                return await delete_post(self.client, target, identity["username"], str(call.args.get("text", "")))
            except PostNotFound:
                if run is None or not run.looks_first:
                    raise
                return f"{target.done} (it was gone already)"  # the cut run took it down
        pieces = slack_messages(str(call.args.get("text", "")))
        found = await posted_pieces(self.client, target, run) if run is not None and run.looks_first else {}
        if run is not None:
            run.pieces, run.found = len(pieces), len([n for n in found if n < len(pieces)])
        for number, piece in enumerate(pieces):
            if number in found:
                continue  # posted before a stop cut the run short
            try:
                await self.client.chat_postMessage(
                    channel=target.channel,
                    text=piece,
                    unfurl_links=False,
                    username=identity["username"],
                    icon_url=identity.get("icon_url"),
                    icon_emoji=identity.get("icon_emoji"),
                    metadata=action_metadata(run, number) if run is not None else None,
                )
            except _DELIVERY_ERRORS as exc:
                raise ActionFailed(f"Slack did not deliver it ({_describe(exc)})") from None
        return target.done

    async def _decider(self, approval: Approval) -> str:
        """A mention of the Slack user who decided, by the id stored with the decision (a display
        name is neither unique nor fixed); else the name, as text."""
        if approval.status in _NO_DECIDER or not approval.decided_by:
            return "nobody"
        user = approval.decided_by_id
        if user and approval.decided_by_team and is_user_id(user):  # decided on Slack
            return f"<@{user}>"
        return escape_clipped(approval.decided_by, 80)

    def _approver_ids(self, channel_key: str) -> list[str]:
        """The Slack user ids among the channel's approvers ("U456" or "T999:U456"), to mention."""
        users = {slack_approver(entry, "")[1] for entry in self.approvers_for(channel_key)}
        return sorted(user for user in users if is_user_id(user))

    # -- delivery --------------------------------------------------------------------------------

    async def _send(self, channel_key: str, pieces: list[str], thread: str | None, identity: dict[str, str]) -> None:
        channel = channel_id_of(channel_key)
        if channel is None:
            log.warning("not a Slack channel key, message dropped: %s", channel_key)
            return
        thread = thread or thread_ts_of(channel_key)  # a thread's conversation is answered in the thread
        await self._send_pieces(channel_key, channel, thread, pieces, identity)

    async def _send_pieces(
        self, channel_key: str, channel: str, thread: str | None, pieces: list[str], identity: dict[str, str]
    ) -> None:
        for number, piece in enumerate(pieces):
            message = {"text": piece, **identity}
            if await self._post_message(channel_key, channel, thread, message, piece=number) is None:
                return  # the rest of a split message would read as a fragment

    async def _post_message(
        self, channel_key: str, channel: str, thread: str | None, message: dict[str, Any], *, piece: int = 0
    ) -> Place | None:
        arguments: dict[str, Any] = {"channel": channel, "unfurl_links": False, "username": NOTICE_NAME, **message}
        if thread:
            arguments["thread_ts"] = thread
        outbox = sending()
        if outbox is not None:
            if (earlier := await posted_before(self.client, outbox, channel, thread, piece)) is not None:
                note_piece(f"slack:{channel}:{earlier}", f"{channel_key_of(channel_key)}:{thread or earlier}")
                return Place(channel, earlier)
            arguments["metadata"] = outbox_metadata(outbox, piece)
        try:
            response = await self.client.chat_postMessage(**arguments)
        except _DELIVERY_ERRORS as exc:
            DELIVERY_FAILURES.labels("slack").inc()
            log.warning("chat.postMessage in %s failed: %s", channel_key, _describe(exc))
            if outbox is not None:
                raise failure_of(exc) from None
            return None
        place = Place(str(response.get("channel") or channel), str(response.get("ts") or ""))
        if outbox is not None:
            outbox.pieces_posted += 1
            note_piece(
                f"slack:{place.channel}:{place.message}", f"{channel_key_of(channel_key)}:{thread or place.message}"
            )
        return place


def _describe(exc: BaseException) -> str:
    """The Slack error code or exception type; never request details, which could carry credentials."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "unknown_error"))
    return type(exc).__name__
