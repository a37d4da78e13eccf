"""The outbound port: everything graph/ may ask of a chat platform. Each adapter implements it."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from graph.actions import ActionCall
from personas import Persona
from storage.records import Approval


class OutboundPort(Protocol):
    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        """Post text in the channel under the persona's name and avatar."""

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        """A one-line system notice in the channel (a skipped persona, a stopped round)."""

    async def trace(self, channel_key: str, text: str) -> None:
        """Diagnostics such as moderator decisions; adapters may drop them."""

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        """The moderator's pick and its reason, as a small line that notifies nobody (when reasons are on)."""

    def typing(self, channel_key: str, persona: Persona) -> AbstractAsyncContextManager[None]:
        """Shows that the persona is writing while the block runs (its model call). Never raises."""

    def answering(self, channel_key: str, event_id: str | None) -> AbstractAsyncContextManager[None]:
        """Marks the platform's message `event_id` as being answered while its round runs. Never raises."""

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        """Show the task plan as one message: post it when `shown_as` is None, else edit that message in place.
        Returns the message's platform id for later edits (None if it could not be shown)."""

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        """Show a pending approval to the approvers (buttons, or a console line)."""

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        """Show how an approval ended: executed, failed, rejected or expired."""

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        """An action that ran at once, with no approval: the console prints it; chat platforms show
        nothing in the channel (an [actions] announce_immediate notice says it there instead)."""

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        """Carry out publish_post or send_message; returns what happened ("posted in #news"). Raises on failure."""

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        """Tell the channel's approvers something needs them (repeated model failures)."""


class Timers(Protocol):
    """Durable timers (APScheduler in bot/)."""

    def schedule_expiry(self, approval_id: int, at: float) -> None: ...

    def schedule_post(self, at: float, channel_key: str, persona_id: str, call: ActionCall) -> str: ...
