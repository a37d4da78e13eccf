"""Approvals on Discord, read from clicks: who may click and what a click decides, the persistent
buttons, the feedback and Revise forms, [View], and the pending list /approvals shows. The request
message itself is rendered in bot/discord_bot/approval_message.py. The rules and words are the
approvals core's (bot/approval_desk.py, bot/approvals.py) and bot/revisions.py's."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Literal, Self

import discord

from bot.approval_desk import Actor, CommandReply
from bot.discord_bot.approval_message import NO_MENTIONS, ApprovalBoard
from bot.discord_bot.delivery import MESSAGE_LIMIT
from bot.discord_bot.inbound import key_for_channel
from bot.numbers import ID_DIGITS
from bot.request_places import Place
from bot.revisions import FORM_HINT, arguments_json, code_blocks, read_arguments
from bot.service import ChannelService
from storage import approvals
from storage.records import Approval, ApprovalStatus

# -- the clicks ----------------------------------------------------------------------------------------
# What a click on an approval button (or a form's submission) does: the approvals core
# (bot/approval_desk.py) says who may decide and lets only the first decision count; here the
# click is acknowledged, the request message edited and a refusal told privately. Asking the core
# before a deferral only lets a refusal be told at once.

log = logging.getLogger(__name__)

SOMETHING_WENT_WRONG = "Something went wrong; the approval is unchanged."


def actor_of(interaction: discord.Interaction) -> Actor:
    return Actor(str(interaction.user.id), interaction.user.display_name)


@dataclass(frozen=True)
class ApprovalClicks:
    service: ChannelService
    board: ApprovalBoard

    async def refusal(self, interaction: discord.Interaction, approval_id: int) -> str | None:
        """Why this user cannot decide this approval from here; None when they can."""
        shown_in = key_for_channel(interaction.channel_id) if interaction.channel_id is not None else ""
        return await self.service.approval_desk.why_not(approval_id, actor_of(interaction), shown_in=shown_in)

    async def decide(
        self,
        interaction: discord.Interaction,
        approval_id: int,
        approve: bool,
        comment: str = "",
        *,
        edited: str | None = None,
        always: bool = False,
    ) -> None:
        """`edited`: the JSON typed into the Revise form; the approval then runs those arguments.
        `always`: Approve always (an MCP tool then runs without asking in this channel)."""
        if not interaction.response.is_done():  # a button click was deferred already, a form's submission not
            await interaction.response.defer()  # acknowledges it; the message is edited below
        if (message := interaction.message) is not None and await self.board.places.place(approval_id) is None:
            await self.board.places.remember(approval_id, Place(str(message.channel.id), str(message.id)))
        actor = actor_of(interaction)
        if edited is None:
            reply = await self.service.approval_desk.decide(approval_id, actor, approve, comment, always=always)
        elif isinstance(args := read_arguments(edited), str):
            reply = CommandReply(f"Approval #{approval_id} is unchanged: {args}.", ok=False)
        else:
            reply = await self.service.approval_desk.revise(approval_id, actor, args)
        if not reply.ok:
            await interaction.followup.send(reply.reply, ephemeral=True, allowed_mentions=NO_MENTIONS)
            return
        # No await between the decision and this line, so the flow it resumes (a queued task that
        # cannot run before this coroutine yields) shows its outcome with this user as the decider.
        self.board.places.note_decider(approval_id, actor.id)
        await self.board.places.save_decider(approval_id, actor.id)
        decided = await approvals.get(self.service.db, approval_id)
        persona = self.service.personas.get(decided.persona_id) if decided else None
        if decided is not None and persona is not None:
            try:
                await self.board.show(decided, persona)
            except (discord.HTTPException, OSError, TimeoutError) as exc:
                log.warning("approval #%s's request could not be updated: %s", approval_id, type(exc).__name__)

    async def settle(self, interaction: discord.Interaction, approval_id: int, retry: bool) -> None:
        """[Run again] or [Close] on an unknown outcome, as /approvals retry or close: once, whoever
        clicks how often; the clicker hears how it went, the request shows the outcome once known."""
        reply = await self.service.approval_desk.settle_unknown(approval_id, actor_of(interaction), retry)
        await tell(interaction, reply.reply)

    async def show_arguments(self, interaction: discord.Interaction, approval_id: int) -> None:
        """The full arguments, to the clicker alone: as many ephemeral messages as they need, never cut."""
        reply = await self.service.approval_desk.show_arguments(approval_id, actor_of(interaction))
        for text in code_blocks(reply.reply, MESSAGE_LIMIT) if reply.ok else [reply.reply]:
            await tell(interaction, text)

    async def revision_form(self, approval_id: int, opened_by: int) -> discord.ui.Modal | str:
        """The Revise form with the arguments as JSON, or why there is none (too long for a form)."""
        approval = await approvals.get(self.service.db, approval_id)
        if approval is None:
            return f"There is no approval #{approval_id}."
        text = arguments_json(approval.args)
        if len(text) > REVISE_MAX_CHARS:
            return (
                f"The arguments of #{approval_id} are too long for a Discord form ({len(text)} characters, the most "
                f"is {REVISE_MAX_CHARS}): approve or reject them as they are."
            )
        return RevisionForm(approval_id, opened_by, approval.action, text)


async def tell(interaction: discord.Interaction, text: str) -> None:
    """A private answer, whether or not the interaction was answered already. Never raises."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    except (discord.HTTPException, OSError, TimeoutError) as exc:
        log.warning("an answer to interaction %s was not delivered: %s", interaction.id, type(exc).__name__)


# -- the buttons and the feedback modal --------------------------------------------------------------
# The approval buttons (a persistent view) and the "Reject with feedback" form.
#
# The buttons are DynamicItems: their custom_id, "approval:<id>:<verb>", carries everything a click
# needs, and the client registers the class in setup_hook, so a button on any request message works
# after a restart too. Each click reaches the ApprovalClicks the client serves (interaction.client).

Verb = Literal["approve", "always", "reject", "feedback", "view", "revise", "retry", "close"]
VERBS = "approve|always|reject|feedback|view|revise|retry|close"
TEMPLATE = rf"approval:(?P<id>[0-9]{{1,{ID_DIGITS}}}):(?P<verb>{VERBS})"  # ASCII
FEEDBACK_FORM = "approval-feedback:{approval_id}:{opened_by}"  # one form per opening
FEEDBACK_FIELD = "feedback"
REVISE_FORM = "approval-revise:{approval_id}:{opened_by}"
REVISE_FIELD = "arguments"
REVISE_MAX_CHARS = 4000  # Discord's most for a text input
FEEDBACK_FORM_MINUTES = 60  # an unsubmitted form is forgotten after this; a late submit then fails
_STYLE: dict[Verb, tuple[str, discord.ButtonStyle]] = {
    "approve": ("Approve", discord.ButtonStyle.success),
    "always": ("Approve always", discord.ButtonStyle.success),  # an MCP tool: approve, and run it here from now on
    "reject": ("Reject", discord.ButtonStyle.danger),
    "feedback": ("Reject with feedback", discord.ButtonStyle.secondary),
    "view": ("View", discord.ButtonStyle.secondary),
    "revise": ("Revise", discord.ButtonStyle.primary),
    "retry": ("Run again", discord.ButtonStyle.success),  # an unknown outcome (ApprovalDesk.settle_unknown)
    "close": ("Close", discord.ButtonStyle.secondary),
}
SETTLE_VERBS: tuple[Verb, ...] = ("retry", "close")
STARTING = "Roundtable is still starting; try again in a moment."


def custom_id(approval_id: int, verb: Verb) -> str:
    return f"approval:{approval_id}:{verb}"


def approval_view(approval_id: int, *, always: bool = False) -> discord.ui.View:
    """The buttons, on a view without a timeout: they keep working until the request is decided.
    `always`: the request is an MCP tool's, which may be approved always (Discord wraps the sixth
    button onto a second row)."""
    view = discord.ui.View(timeout=None)
    for verb in _STYLE:
        if verb not in SETTLE_VERBS and (verb != "always" or always):
            view.add_item(ApprovalButton(approval_id, verb))
    return view


def settle_view(approval: Approval) -> discord.ui.View | None:
    """[Run again] and [Close] for an unknown outcome (persistent, like the request's buttons); else none."""
    if approval.status is not ApprovalStatus.UNKNOWN:
        return None
    view = discord.ui.View(timeout=None)
    for verb in SETTLE_VERBS:
        view.add_item(ApprovalButton(approval.id, verb))
    return view


def clicks_of(interaction: discord.Interaction) -> ApprovalClicks | None:
    clicks = getattr(interaction.client, "approval_clicks", None)
    return clicks if isinstance(clicks, ApprovalClicks) else None


DEFERRED_VERBS = ("approve", "always", "reject", *SETTLE_VERBS)


class ApprovalButton(discord.ui.DynamicItem[discord.ui.Button], template=TEMPLATE):
    def __init__(self, approval_id: int, verb: Verb) -> None:
        label, style = _STYLE[verb]
        super().__init__(discord.ui.Button(label=label, style=style, custom_id=custom_id(approval_id, verb)))
        self.approval_id = approval_id
        self.verb: Verb = verb

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(int(match["id"]), match["verb"])  # type: ignore[arg-type]

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Only approvers get past this, and only while the approval is pending; others are told why, privately.
        View is answered by the service itself, which shows approvers the arguments in any state.
        A decision's click is deferred first: who may decide is read from storage, and Discord wants a first
        answer within 3 seconds (10062 Unknown interaction after that); a form can only be a first answer."""
        if self.verb in DEFERRED_VERBS:
            await interaction.response.defer()
        # Who may run again or close an unknown outcome the desk checks as it settles it.
        return self.verb in ("view", *SETTLE_VERBS) or await _may_decide(interaction, self.approval_id)

    async def callback(self, interaction: discord.Interaction) -> None:
        clicks = clicks_of(interaction)
        try:
            if clicks is None:
                await tell(interaction, STARTING)
            elif self.verb == "feedback":
                await interaction.response.send_modal(FeedbackForm(self.approval_id, interaction.id))
            elif self.verb == "view":
                await clicks.show_arguments(interaction, self.approval_id)
            elif self.verb in SETTLE_VERBS:
                await clicks.settle(interaction, self.approval_id, retry=self.verb == "retry")
            elif self.verb == "revise":
                form = await clicks.revision_form(self.approval_id, interaction.id)
                await (tell(interaction, form) if isinstance(form, str) else interaction.response.send_modal(form))
            else:
                always = self.verb == "always"
                await clicks.decide(
                    interaction, self.approval_id, approve=always or self.verb == "approve", always=always
                )
        except Exception:
            log.exception("the %s button of approval #%s failed", self.verb, self.approval_id)
            await tell(interaction, SOMETHING_WENT_WRONG)


class _ApprovalForm(discord.ui.Modal):
    """A form opened from an approval request's button: only an approver may submit it."""

    approval_id: int
    purpose = "form"

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        return await _may_decide(interaction, self.approval_id)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        clicks = clicks_of(interaction)
        if clicks is None:
            await tell(interaction, STARTING)
            return
        await self.submitted(clicks, interaction)

    async def submitted(self, clicks: ApprovalClicks, interaction: discord.Interaction) -> None:
        raise NotImplementedError

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:  # type: ignore[override]
        log.error("the %s of approval #%s failed", self.purpose, self.approval_id, exc_info=error)
        await tell(interaction, SOMETHING_WENT_WRONG)


class FeedbackForm(_ApprovalForm):
    """Why the request is rejected; submitting rejects it with that feedback for the persona."""

    purpose = "feedback form"

    def __init__(self, approval_id: int, opened_by: int) -> None:
        form_id = FEEDBACK_FORM.format(approval_id=approval_id, opened_by=opened_by)
        super().__init__(title=f"Reject approval #{approval_id}", custom_id=form_id, timeout=FEEDBACK_FORM_MINUTES * 60)
        self.approval_id = approval_id
        self.feedback: discord.ui.TextInput[Self] = discord.ui.TextInput(
            custom_id=FEEDBACK_FIELD, style=discord.TextStyle.paragraph, max_length=1000, required=True
        )
        self.add_item(discord.ui.Label(text="What should the persona do differently?", component=self.feedback))

    async def submitted(self, clicks: ApprovalClicks, interaction: discord.Interaction) -> None:
        await clicks.decide(interaction, self.approval_id, approve=False, comment=self.feedback.value.strip())


class RevisionForm(_ApprovalForm):
    """The arguments as JSON, to edit; submitting approves the edited arguments."""

    purpose = "revise form"

    def __init__(self, approval_id: int, opened_by: int, action: str, arguments: str) -> None:
        form_id = REVISE_FORM.format(approval_id=approval_id, opened_by=opened_by)
        super().__init__(title=f"Revise approval #{approval_id}", custom_id=form_id, timeout=FEEDBACK_FORM_MINUTES * 60)
        self.approval_id = approval_id
        self.arguments: discord.ui.TextInput[Self] = discord.ui.TextInput(
            custom_id=REVISE_FIELD,
            style=discord.TextStyle.paragraph,
            default=arguments,
            max_length=REVISE_MAX_CHARS,
            required=True,
        )
        label = discord.ui.Label(text=f"Arguments of {action}"[:45], description=FORM_HINT, component=self.arguments)
        self.add_item(label)

    async def submitted(self, clicks: ApprovalClicks, interaction: discord.Interaction) -> None:
        await clicks.decide(interaction, self.approval_id, approve=True, edited=self.arguments.value)


async def _may_decide(interaction: discord.Interaction, approval_id: int) -> bool:
    clicks = clicks_of(interaction)
    try:
        refusal = STARTING if clicks is None else await clicks.refusal(interaction, approval_id)
    except Exception:
        log.exception("could not check who may decide approval #%s", approval_id)
        refusal = SOMETHING_WENT_WRONG
    if refusal is not None:
        await tell(interaction, refusal)
        return False
    return True


# -- /approvals ------------------------------------------------------------------------------------
# /approvals (declared in bot/commands.py) lists this channel's pending approvals with links to their
# requests: Discord renders that list itself. Decisions are made with the buttons on each request.

PENDING_HEADING = "Pending approvals (approvers decide with the buttons on each request):"


async def pending_list(service: ChannelService, board: ApprovalBoard, channel_id: int, guild_id: int | None) -> str:
    """The approvals core's list, each request with its expiry and a link to its message."""

    async def expiry_and_link(approval: Approval) -> str:
        place = await board.places.place(approval.id)
        link = f"https://discord.com/channels/{guild_id}/{place.channel}/{place.message}" if place and guild_id else ""
        return f", expires <t:{int(approval.expires_at)}:R>" + (f": {link}" if link else "")

    return await service.approval_desk.pending_list(
        key_for_channel(channel_id),
        heading=PENDING_HEADING,
        clean=discord.utils.escape_markdown,
        detail=expiry_and_link,
    )
