"""What a click on an approval button (or a feedback form) does: who may decide, and the decision.

The channel service has the last word: it checks the approver list again and lets only the first
decision count. The check here only lets a refusal be told at once, privately, without a deferral.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import discord

from bot.approvals import refusal
from bot.discord_bot.approval_board import ApprovalBoard
from bot.discord_bot.approval_places import Place
from bot.discord_bot.inbound import key_for_channel
from bot.service import Actor, ChannelService
from storage import approvals

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
        may = approval is not None and self.service.may_decide(approval.channel_key, actor)
        return refusal(approval, approval_id, may_decide=may)

    async def decide(
        self, interaction: discord.Interaction, approval_id: int, approve: bool, comment: str = ""
    ) -> None:
        await interaction.response.defer()  # acknowledges the click; the message is edited below
        if interaction.message is not None and await self.board.places.place(approval_id) is None:
            await self.board.places.remember(approval_id, Place(interaction.message.channel.id, interaction.message.id))
        user = interaction.user
        reply = await self.service.decide(approval_id, Actor(str(user.id), user.display_name), approve, comment)
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


async def tell(interaction: discord.Interaction, text: str) -> None:
    """A private answer, whether or not the interaction was answered already. Never raises."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    except (discord.HTTPException, OSError, TimeoutError) as exc:
        log.warning("an answer to interaction %s was not delivered: %s", interaction.id, type(exc).__name__)
