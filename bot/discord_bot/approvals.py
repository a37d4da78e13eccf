"""Approvals on Discord, one feature in one file: the request text, the request messages edited as
approvals are decided, who may click and what a click decides, the persistent buttons, the feedback
and Revise forms, [View], and the pending list /approvals shows. The rules and words are
bot/approvals.py's and bot/revisions.py's."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any, Literal, Self

import discord

from bot.approval_desk import Actor, CommandReply
from bot.approvals import outcome, refusal
from bot.discord_bot.approval_places import ApprovalPlaces, Place
from bot.discord_bot.delivery import MESSAGE_LIMIT
from bot.discord_bot.inbound import channel_id_of, key_for_channel
from bot.numbers import ID_DIGITS
from bot.revisions import FORM_HINT, arguments_json, code_blocks, read_arguments
from bot.service import ChannelService
from graph.actions import ActionCall
from personas import Persona
from storage import approvals
from storage.records import Approval, ApprovalStatus

# -- the request text --------------------------------------------------------------------------------
# What an approval request says in Discord, while it waits and after it is decided.
#
# Plain text, no embed: Roundtable is invited without Embed Links (invite.py), and a bot's embeds
# are hidden where it lacks that permission. The request and its outcome are the same message:
# the last line changes from the expiry to who decided and what happened.

VALUE_LIMIT = 300  # characters of one argument shown; the stored approval keeps all of it
RESULT_LIMIT = 300
_SPACE = re.compile(r"\s+")
_MARK = {
    ApprovalStatus.APPROVED: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.RUNNING: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.EXECUTED: "\N{WHITE HEAVY CHECK MARK}",
    ApprovalStatus.FAILED: "\N{WARNING SIGN}",
    ApprovalStatus.UNKNOWN: "\N{WARNING SIGN}",
    ApprovalStatus.REJECTED: "\N{CROSS MARK}",
    ApprovalStatus.EXPIRED: "\N{HOURGLASS}",
}


def approval_text(approval: Approval, persona: Persona, *, decider_id: int | None = None) -> str:
    action = approval.action.replace("`", "")[:40]  # inside a code span: shown as is, no escapes
    head = f"**Approval #{approval.id}**: {_safe(persona.display_name, 80)} wants to run `{action}`"
    if approval.revises:
        head += f" (revises #{approval.revises})"
    if approval.reason:
        head += f"\nWaits: {_safe(approval.reason, 200)}"
    last = status_line(approval, decider_id)
    budget = MESSAGE_LIMIT - len(head) - len(last) - 2
    shown = [f"> {_safe(str(key), 40)}: {_safe(str(value), VALUE_LIMIT)}" for key, value in approval.args.items()]
    args = _fit(shown, budget)
    return "\n".join([head, *args, last])


def status_line(approval: Approval, decider_id: int | None) -> str:
    """The approval's state in one line; `decider_id` (a Discord user) is shown as a mention that pings nobody."""
    who = f"<@{decider_id}>" if decider_id else _safe(approval.decided_by or "someone", 80)
    if approval.status is ApprovalStatus.PENDING:
        at = int(approval.expires_at)
        return f"Expires <t:{at}:t> (<t:{at}:R>). Approvers: use the buttons below."
    return f"{_MARK.get(approval.status, '')} {outcome(approval, who, clean=lambda text: _safe(text, RESULT_LIMIT))}".strip()


def _safe(text: str, limit: int) -> str:
    """One line, at most `limit` characters of the original, with markdown and mentions made inert."""
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return discord.utils.escape_mentions(discord.utils.escape_markdown(flat))


def _fit(lines: list[str], budget: int) -> list[str]:
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) + 1 > budget - 20:
            kept.append(f"> \N{HORIZONTAL ELLIPSIS} ({len(lines) - len(kept)} more)")
            break
        kept.append(line)
    return kept


# -- the request messages ----------------------------------------------------------------------------
# The approval request messages: posted by the bot with buttons, then edited as the approval is decided.
#
# Two edits can race for one request: the click shows "Approved by …; running it now" while the
# resumed flow shows the final outcome. A lock per approval orders them, and once a final outcome is
# shown nothing replaces it. Edits go through the bot's own REST API (not the interaction token),
# since an expiry or a late execution can come long after the click's 15 minutes.

NO_MENTIONS = discord.AllowedMentions.none()
_NOT_FINAL = (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class ApprovalBoard:
    def __init__(self, client: discord.Client, places: ApprovalPlaces) -> None:
        self._client = client
        self.places = places
        self._locks: dict[int, asyncio.Lock] = {}
        self._settled: set[int] = set()

    async def post_request(self, approval: Approval, persona: Persona, buttons: discord.ui.View) -> None:
        """Raises discord.py's and aiohttp's errors; the port decides what a failed post means."""
        channel = self._client.get_partial_messageable(channel_id_of(approval.channel_key))
        message = await channel.send(approval_text(approval, persona), view=buttons, allowed_mentions=NO_MENTIONS)
        await self.places.remember(approval.id, Place(message.channel.id, message.id))

    async def show(self, approval: Approval, persona: Persona) -> bool:
        """Edit the request to show the approval's state, buttons removed. False when no request
        message is known (the approval went to Slack, or its post failed). Raises on a failed edit."""
        place = await self.places.place(approval.id)
        if place is None:
            return False
        async with self._locks.setdefault(approval.id, asyncio.Lock()):
            if approval.id in self._settled:
                return True  # a final outcome is already showing
            decider = await self.places.decider(approval.id)
            message = self._client.get_partial_messageable(place.channel_id).get_partial_message(place.message_id)
            text = approval_text(approval, persona, decider_id=decider)
            await message.edit(content=text, view=None, allowed_mentions=NO_MENTIONS)
            if approval.status not in _NOT_FINAL:
                self._settled.add(approval.id)
                self._locks.pop(approval.id, None)
        return True


# -- who may decide, and the decision ----------------------------------------------------------------
# What a click on an approval button (or a feedback form) does: who may decide, and the decision.
#
# The channel service has the last word: it checks the approver list again and lets only the first
# decision count. The check here only lets a refusal be told at once, privately, without a deferral.

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
SOMETHING_WENT_WRONG = "Something went wrong; the approval is unchanged."


@dataclass(frozen=True)
class ApprovalDesk:
    service: ChannelService
    board: ApprovalBoard

    async def refusal(self, interaction: discord.Interaction, approval_id: int) -> str | None:
        """Why this user cannot decide this approval from here; None when they can."""
        approval = await approvals.get(self.service.db, approval_id)
        if approval is not None and (
            interaction.channel_id is None or approval.channel_key != key_for_channel(interaction.channel_id)
        ):
            return f"Approval #{approval_id} belongs to another channel."
        actor = Actor(str(interaction.user.id), interaction.user.display_name)
        may = approval is not None and self.service.approval_desk.may_decide(approval.channel_key, actor)
        return refusal(approval, approval_id, may_decide=may)

    async def decide(
        self,
        interaction: discord.Interaction,
        approval_id: int,
        approve: bool,
        comment: str = "",
        *,
        edited: str | None = None,
    ) -> None:
        """`edited`: the JSON typed into the Revise form; the approval then runs those arguments."""
        await interaction.response.defer()  # acknowledges the click; the message is edited below
        if interaction.message is not None and await self.board.places.place(approval_id) is None:
            await self.board.places.remember(approval_id, Place(interaction.message.channel.id, interaction.message.id))
        user = interaction.user
        actor = Actor(str(user.id), user.display_name)
        if edited is None:
            reply = await self.service.approval_desk.decide(approval_id, actor, approve, comment)
        elif isinstance(args := read_arguments(edited), str):
            reply = CommandReply(f"Approval #{approval_id} is unchanged: {args}.", ok=False)
        else:
            reply = await self.service.approval_desk.revise(approval_id, actor, args)
        if not reply.ok:
            await interaction.followup.send(reply.reply, ephemeral=True, allowed_mentions=NO_MENTIONS)
            return
        # No await between the decision and this line, so the flow it resumes (a queued task that
        # cannot run before this coroutine yields) shows its outcome with this user as the decider.
        self.board.places.note_decider(approval_id, user.id)
        await self.board.places.save_decider(approval_id, user.id)
        decided = await approvals.get(self.service.db, approval_id)
        persona = self.service.personas.get(decided.persona_id) if decided else None
        if decided is not None and persona is not None:
            try:
                await self.board.show(decided, persona)
            except (discord.HTTPException, OSError, TimeoutError) as exc:
                log.warning("approval #%s's request could not be updated: %s", approval_id, type(exc).__name__)

    async def show_arguments(self, interaction: discord.Interaction, approval_id: int) -> None:
        """The full arguments, to the clicker alone: as many ephemeral messages as they need, never cut."""
        reply = await self.service.approval_desk.show_arguments(
            approval_id, Actor(str(interaction.user.id), interaction.user.display_name)
        )
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
# after a restart too. Each click reaches the ApprovalDesk the client serves (interaction.client).

log = logging.getLogger(__name__)

Verb = Literal["approve", "reject", "feedback", "view", "revise"]
TEMPLATE = rf"approval:(?P<id>[0-9]{{1,{ID_DIGITS}}}):(?P<verb>approve|reject|feedback|view|revise)"  # ASCII digits
FEEDBACK_FORM = "approval-feedback:{approval_id}:{opened_by}"  # one form per opening
FEEDBACK_FIELD = "feedback"
REVISE_FORM = "approval-revise:{approval_id}:{opened_by}"
REVISE_FIELD = "arguments"
REVISE_MAX_CHARS = 4000  # Discord's most for a text input
FEEDBACK_FORM_MINUTES = 60  # an unsubmitted form is forgotten after this; a late submit then fails
_STYLE: dict[Verb, tuple[str, discord.ButtonStyle]] = {
    "approve": ("Approve", discord.ButtonStyle.success),
    "reject": ("Reject", discord.ButtonStyle.danger),
    "feedback": ("Reject with feedback", discord.ButtonStyle.secondary),
    "view": ("View", discord.ButtonStyle.secondary),
    "revise": ("Revise", discord.ButtonStyle.primary),
}
STARTING = "Roundtable is still starting; try again in a moment."


def custom_id(approval_id: int, verb: Verb) -> str:
    return f"approval:{approval_id}:{verb}"


def approval_view(approval_id: int) -> discord.ui.View:
    """The buttons, on a view without a timeout: they keep working until the request is decided."""
    view = discord.ui.View(timeout=None)
    for verb in _STYLE:
        view.add_item(ApprovalButton(approval_id, verb))
    return view


def desk_of(interaction: discord.Interaction) -> ApprovalDesk | None:
    desk = getattr(interaction.client, "approval_desk", None)
    return desk if isinstance(desk, ApprovalDesk) else None


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
        View is answered by the service itself, which shows approvers the arguments in any state."""
        return self.verb == "view" or await _may_decide(interaction, self.approval_id)

    async def callback(self, interaction: discord.Interaction) -> None:
        desk = desk_of(interaction)
        try:
            if desk is None:
                await tell(interaction, STARTING)
            elif self.verb == "feedback":
                await interaction.response.send_modal(FeedbackForm(self.approval_id, interaction.id))
            elif self.verb == "view":
                await desk.show_arguments(interaction, self.approval_id)
            elif self.verb == "revise":
                form = await desk.revision_form(self.approval_id, interaction.id)
                await (tell(interaction, form) if isinstance(form, str) else interaction.response.send_modal(form))
            else:
                await desk.decide(interaction, self.approval_id, approve=self.verb == "approve")
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
        desk = desk_of(interaction)
        if desk is None:
            await tell(interaction, STARTING)
            return
        await self.submitted(desk, interaction)

    async def submitted(self, desk: ApprovalDesk, interaction: discord.Interaction) -> None:
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

    async def submitted(self, desk: ApprovalDesk, interaction: discord.Interaction) -> None:
        await desk.decide(interaction, self.approval_id, approve=False, comment=self.feedback.value.strip())


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

    async def submitted(self, desk: ApprovalDesk, interaction: discord.Interaction) -> None:
        await desk.decide(interaction, self.approval_id, approve=True, edited=self.arguments.value)


async def _may_decide(interaction: discord.Interaction, approval_id: int) -> bool:
    desk = desk_of(interaction)
    try:
        refusal = STARTING if desk is None else await desk.refusal(interaction, approval_id)
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

log = logging.getLogger(__name__)


async def pending_list(service: ChannelService, board: ApprovalBoard, channel_id: int, guild_id: int | None) -> str:
    waiting = await approvals.pending(service.db, key_for_channel(channel_id))
    if not waiting:
        return "No approvals are pending here."
    rows = []
    for approval in waiting:
        persona = service.personas.get(approval.persona_id)
        wanted = ActionCall(approval.call_id, approval.action, approval.args).describe()
        row = (
            f"#{approval.id} {persona.display_name if persona else approval.persona_id} wants "
            f"{discord.utils.escape_markdown(wanted)}, expires <t:{int(approval.expires_at)}:R>"
        )
        place = await board.places.place(approval.id)
        if place is not None and guild_id is not None:
            row += f": https://discord.com/channels/{guild_id}/{place.channel_id}/{place.message_id}"
        rows.append(row)
    return "Pending approvals (approvers decide with the buttons on each request):\n" + "\n".join(rows)
