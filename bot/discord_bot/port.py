"""DiscordPort: the outbound port (graph/port.py) for Discord.

Persona posts go through a webhook per channel under the persona's name and avatar (delivery.py).
A failed delivery is logged; it is raised as PostFailed only while the outbox sends (bot/outbox.py),
which tries again or gives up, as in the Slack port. `execute` raises, because its caller turns
the error into the persona's tool result.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

import aiohttp
import discord

from bot.approvals import outcome
from bot.avatars import TWEMOJI_BASE_URL
from bot.discord_bot.action_posts import ActionPosts
from bot.discord_bot.approval_message import PLATFORM, ApprovalBoard
from bot.discord_bot.approvals import approval_view, settle_view
from bot.discord_bot.delivery import MESSAGE_LIMIT, NO_MENTIONS, Delivery, failure_of, nonce
from bot.discord_bot.inbound import channel_id_of, key_for_channel
from bot.plan_message import fit_plan, plan_message_id, plan_message_place
from bot.port import sending
from bot.request_places import RequestPlaces
from graph.action_marks import current_run
from graph.actions import ActionCall
from graph.mcp import is_mcp_action
from graph.observe import DELIVERY_FAILURES
from graph.port import OutboundPort
from personas import Persona
from storage.records import Approval

log = logging.getLogger(__name__)

_DELIVERY_ERRORS = (discord.HTTPException, aiohttp.ClientError, TimeoutError)


class DiscordPort:
    """Channel keys are "discord:<channel or thread id>". The `thread` arguments are unused: a Discord
    thread is a channel with a key of its own.

    Approval requests are posted with buttons (approvals.py) through `board`, which remembers
    each request so its outcome replaces the buttons. With `approvals_elsewhere` ([approvals] surface
    = "slack" and Slack in this process) requests are shown there instead, their outcome updates
    them there, and the Discord channel is told both.
    """

    def __init__(
        self,
        client: discord.Client,
        board: ApprovalBoard | None = None,
        *,
        approvals_elsewhere: OutboundPort | None = None,
        twemoji_base_url: str = TWEMOJI_BASE_URL,
        approvers_for: Callable[[str], set[str]] = lambda channel_key: set(),
    ) -> None:
        self._client = client
        self._approvers_for = approvers_for
        self._delivery = Delivery(client, twemoji_base_url)
        self._action_posts = ActionPosts(client, self._delivery)
        self.board = board or ApprovalBoard(client, RequestPlaces(PLATFORM))
        self._elsewhere = approvals_elsewhere

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        try:
            await self._delivery.as_persona(await self._delivery.destination(channel_key), persona, text)
        except _DELIVERY_ERRORS as exc:
            DELIVERY_FAILURES.labels("discord").inc()
            log.warning("%s's post in %s was not delivered: %s", persona.id, channel_key, _describe(exc))
            _raise_for_outbox(exc)

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        try:
            await self._delivery.as_bot(await self._delivery.destination(channel_key), text)
        except _DELIVERY_ERRORS as exc:
            DELIVERY_FAILURES.labels("discord").inc()
            log.warning("a notice in %s was not delivered: %s", channel_key, _describe(exc))
            _raise_for_outbox(exc)

    async def trace(self, channel_key: str, text: str) -> None:
        log.debug("trace %s: %s", channel_key, text)

    @asynccontextmanager
    async def answering(self, channel_key: str, event_id: str | None) -> AsyncIterator[None]:
        """Nothing to mark: the typing indicator shows each persona at work."""
        yield

    @asynccontextmanager
    async def typing(self, channel_key: str, persona: Persona) -> AsyncIterator[None]:
        """Discord's "is typing…" for the length of the model call (the bot's; a webhook cannot type)."""
        try:
            context = self._client.get_partial_messageable(channel_id_of(channel_key)).typing()
            await context.__aenter__()
        except _DELIVERY_ERRORS as exc:
            log.debug("no typing indicator in %s: %s", channel_key, _describe(exc))
            yield
            return
        try:
            yield
        finally:
            with suppress(*_DELIVERY_ERRORS):
                await context.__aexit__(None, None, None)

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        try:
            await self._delivery.as_bot(await self._delivery.destination(channel_key), f"-# {text}", silent=True)
        except _DELIVERY_ERRORS as exc:
            log.warning("a moderator reason in %s was not delivered: %s", channel_key, _describe(exc))
            _raise_for_outbox(exc)

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        """An edit of the bot's plan message `shown_as`; a new message when there is none yet or it is gone
        (deleted, or not the bot's to edit). An edit that fails otherwise keeps the message: the next edit
        brings it current."""
        shown = fit_plan(text, MESSAGE_LIMIT)
        if place := plan_message_place(shown_as):
            try:
                channel = self._client.get_partial_messageable(int(place[0]))
                await channel.get_partial_message(int(place[1])).edit(content=shown, allowed_mentions=NO_MENTIONS)
                return shown_as
            except ValueError:
                log.warning("not a Discord plan message id in %s; posting the plan anew", channel_key)
            except (discord.NotFound, discord.Forbidden) as exc:
                log.warning("the plan message in %s is gone (%s); posting it anew", channel_key, _describe(exc))
            except _DELIVERY_ERRORS as exc:
                log.warning("the plan in %s was not updated: %s", channel_key, _describe(exc))
                _raise_for_outbox(exc)
                return shown_as
        try:
            channel_id = channel_id_of(channel_key)
            sent = await self._client.get_partial_messageable(channel_id).send(
                shown, allowed_mentions=NO_MENTIONS, nonce=nonce(0)
            )
        except ValueError:
            log.warning("not a Discord channel key, plan not shown: %s", channel_key)
            return None
        except _DELIVERY_ERRORS as exc:
            log.warning("the plan in %s was not delivered: %s", channel_key, _describe(exc))
            _raise_for_outbox(exc)
            return None
        return plan_message_id(channel_id, sent.id)

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        """A notice in the channel; when the channel is gone (or closed to the bot), a direct message
        to each of its approvers instead."""
        try:
            await self._delivery.as_bot(await self._delivery.destination(channel_key), f"For the approvers: {text}")
            return
        except (discord.NotFound, discord.Forbidden) as exc:
            log.warning("the approvers' notice in %s was refused (%s); sending it to them", channel_key, _describe(exc))
        except _DELIVERY_ERRORS as exc:
            log.warning("a notice to the approvers in %s was not delivered: %s", channel_key, _describe(exc))
            _raise_for_outbox(exc)
            return
        await self._tell_each_approver(channel_key, f"For the approvers ({channel_key}): {text}")

    async def _tell_each_approver(self, channel_key: str, text: str) -> None:
        """Each approver's direct message stands alone: one whose DMs are closed to the bot (403, 50007) is
        logged and counted and the others are still told; a failure worth another try is raised once all
        were tried, and the next attempt finds who was told already (their DM since the attempt) and
        skips them."""
        retry: BaseException | None = None
        for approver in sorted(a for a in self._approvers_for(channel_key) if a.isdigit()):
            try:
                user = self._client.get_user(int(approver)) or await self._client.fetch_user(int(approver))
                dm = user.dm_channel or await user.create_dm()
                if not await self._delivery.posted_before(dm.id, [text], self._delivery.by_the_bot):
                    await dm.send(text, allowed_mentions=NO_MENTIONS)
                    if (outbox := sending()) is not None:
                        outbox.pieces_posted += 1
            except (discord.NotFound, discord.Forbidden) as exc:
                DELIVERY_FAILURES.labels("discord").inc()
                log.warning("approver %s takes no direct message from the bot: %s", approver, _describe(exc))
            except _DELIVERY_ERRORS as exc:
                DELIVERY_FAILURES.labels("discord").inc()
                log.warning("approver %s could not be told: %s", approver, _describe(exc))
                retry = retry or exc
        if retry is not None:
            _raise_for_outbox(retry)

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        if self._elsewhere is not None and await self._shown_elsewhere(approval, persona):
            await self.notice(approval.channel_key, f"Approval #{approval.id} was sent to Slack for review.", None)
            return
        try:
            buttons = approval_view(approval.id, always=is_mcp_action(approval.action))
            await self.board.post_request(approval, persona, buttons)
        except _DELIVERY_ERRORS as exc:
            log.warning("approval #%s could not be posted in %s: %s", approval.id, approval.channel_key, _describe(exc))
            _raise_for_outbox(exc)

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        """Nothing in the channel: the audit log holds it ([actions] announce_immediate says it there)."""

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        if self._elsewhere is not None:
            await self._elsewhere.show_decision(approval, persona)  # the request there loses its buttons
        try:
            if await self.board.show(approval, persona, settle_view(approval)):
                return
        except _DELIVERY_ERRORS as exc:
            log.warning("approval #%s's request could not be updated: %s", approval.id, _describe(exc))
            if not isinstance(exc, discord.NotFound | discord.Forbidden):
                _raise_for_outbox(exc)  # gone: its outcome becomes a notice instead
        # No request message to edit (sent to Slack, lost, or deleted): the outcome becomes a notice.
        shown = outcome(approval)
        await self.notice(approval.channel_key, f"Action #{approval.id} by {persona.display_name}: {shown}", None)

    async def _shown_elsewhere(self, approval: Approval, persona: Persona) -> bool:
        assert self._elsewhere is not None
        try:
            await self._elsewhere.request_approval(approval, persona)
        except Exception as exc:  # another platform's failure must not lose the request: buttons here instead
            log.warning("approval #%s could not be sent to Slack (%s); asking here", approval.id, type(exc).__name__)
            return False
        return True

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        """A post is known by its place after the mark it notes first (action_posts.py): a run a stop
        cut short is looked up by it."""
        if call.name in ("publish_post", "delete_post"):
            named = call.args["channel"]
        elif call.name == "send_message":
            named = call.args["to"]  # a channel; Roundtable does not direct-message people on Discord
        else:
            raise ValueError(f"Discord cannot run {call.name}")
        if (run := current_run()) is not None and run.looks_first:
            await self._action_posts.connected()
        target = await target_channel(self._client, channel_id_of(channel_key), named)
        where = await self._delivery.destination(key_for_channel(target.id))
        if call.name == "delete_post":
            await self._delivery.remove_as_persona(where, persona, call.args["text"])
            return f"deleted the post in #{target.name}"
        await self._action_posts.post(where, persona, call.args["text"], run)
        return f"posted in #{target.name}"


def _raise_for_outbox(exc: BaseException) -> None:
    """While the outbox sends, a failure is its business: it tries again or gives up."""
    if sending() is not None:
        raise failure_of(exc) from None


def _describe(exc: BaseException) -> str:
    """Status and Discord error code, or the exception type; never request details or message text."""
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status} (Discord code {exc.code})"
    return type(exc).__name__


# -- where an action posts --------------------------------------------------------------------------
# The channel a persona's action names ("#news", "<#123>", "123"), looked up in the server it spoke in.
#
# Only that server: a persona can never post into another server the bot happens to be in.

_BY_ID = re.compile(r"<#(\d+)>|(\d+)")


class UnknownTarget(LookupError):
    """The action names no channel of this server; the message becomes the persona's tool result."""


async def target_channel(
    client: discord.Client, near_channel_id: int, name: str
) -> discord.abc.GuildChannel | discord.Thread:
    here = client.get_channel(near_channel_id) or await client.fetch_channel(near_channel_id)
    guild = getattr(here, "guild", None)
    if guild is None:
        raise UnknownTarget("actions can only name channels of a server")
    wanted = name.strip().removeprefix("#")
    if by_id := _BY_ID.fullmatch(wanted):
        found = guild.get_channel_or_thread(int(by_id.group(1) or by_id.group(2)))
    else:
        found = discord.utils.get(guild.text_channels, name=wanted.lower())
    if not isinstance(found, discord.TextChannel | discord.Thread):
        raise UnknownTarget(f"there is no text channel #{wanted} in this server")
    return found
