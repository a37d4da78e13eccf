"""The approval buttons (a persistent view) and the "Reject with feedback" form.

The buttons are DynamicItems: their custom_id, "approval:<id>:<verb>", carries everything a click
needs, and the client registers the class in setup_hook, so a button on any request message works
after a restart too. Each click reaches the ApprovalDesk the client serves (interaction.client).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal, Self

import discord

from bot.discord_bot.approval_clicks import SOMETHING_WENT_WRONG, ApprovalDesk, tell
from bot.numbers import ID_DIGITS

log = logging.getLogger(__name__)

Verb = Literal["approve", "reject", "feedback"]
TEMPLATE = rf"approval:(?P<id>[0-9]{{1,{ID_DIGITS}}}):(?P<verb>approve|reject|feedback)"  # ASCII digits only
FEEDBACK_FORM = "approval-feedback:{approval_id}:{opened_by}"  # one form per opening
FEEDBACK_FIELD = "feedback"
FEEDBACK_FORM_MINUTES = 60  # an unsubmitted form is forgotten after this; a late submit then fails
_STYLE: dict[Verb, tuple[str, discord.ButtonStyle]] = {
    "approve": ("Approve", discord.ButtonStyle.success),
    "reject": ("Reject", discord.ButtonStyle.danger),
    "feedback": ("Reject with feedback", discord.ButtonStyle.secondary),
}
STARTING = "Roundtable is still starting; try again in a moment."


def custom_id(approval_id: int, verb: Verb) -> str:
    return f"approval:{approval_id}:{verb}"


def approval_view(approval_id: int) -> discord.ui.View:
    """The three buttons, on a view without a timeout: they keep working until the request is decided."""
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
        """Only approvers get past this, and only while the approval is pending; others are told why, privately."""
        return await _may_decide(interaction, self.approval_id)

    async def callback(self, interaction: discord.Interaction) -> None:
        desk = desk_of(interaction)
        try:
            if desk is None:
                await tell(interaction, STARTING)
            elif self.verb == "feedback":
                await interaction.response.send_modal(FeedbackForm(self.approval_id, interaction.id))
            else:
                await desk.decide(interaction, self.approval_id, approve=self.verb == "approve")
        except Exception:
            log.exception("the %s button of approval #%s failed", self.verb, self.approval_id)
            await tell(interaction, SOMETHING_WENT_WRONG)


class FeedbackForm(discord.ui.Modal):
    def __init__(self, approval_id: int, opened_by: int) -> None:
        form_id = FEEDBACK_FORM.format(approval_id=approval_id, opened_by=opened_by)
        super().__init__(title=f"Reject approval #{approval_id}", custom_id=form_id, timeout=FEEDBACK_FORM_MINUTES * 60)
        self.approval_id = approval_id
        self.feedback: discord.ui.TextInput[Self] = discord.ui.TextInput(
            custom_id=FEEDBACK_FIELD, style=discord.TextStyle.paragraph, max_length=1000, required=True
        )
        self.add_item(discord.ui.Label(text="What should the persona do differently?", component=self.feedback))

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        return await _may_decide(interaction, self.approval_id)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        desk = desk_of(interaction)
        if desk is None:
            await tell(interaction, STARTING)
            return
        await desk.decide(interaction, self.approval_id, approve=False, comment=self.feedback.value.strip())

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:  # type: ignore[override]
        log.error("the feedback form of approval #%s failed", self.approval_id, exc_info=error)
        await tell(interaction, SOMETHING_WENT_WRONG)


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
