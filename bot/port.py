"""The outbound port of a process that serves several platforms: each call goes to the platform
named by its channel key's prefix ("slack:", "discord:", "console:")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field

from graph.actions import ActionCall
from graph.port import OutboundPort
from personas import Persona
from storage.records import Approval


class UnknownPlatform(LookupError):
    """A channel key of a platform this process does not serve."""


# -- what a platform port needs to know while the outbox sends through it ------------------------------


class PostFailed(Exception):
    """A post the platform did not take, raised by a port while the outbox sends (else it is only logged).
    `permanent`: trying again cannot help (channel_not_found). `retry_after`: the platform's own wait.
    `maybe_posted`: no answer came (a timeout, the network), so the platform may have taken it."""

    def __init__(
        self, reason: str, *, permanent: bool = False, retry_after: float | None = None, maybe_posted: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after = retry_after
        self.maybe_posted = maybe_posted


@dataclass
class Sending:
    """The outbox entry being sent: its id marks what it posts (Slack metadata, Discord nonce), and
    `unknown_since` says an earlier attempt's outcome is unknown (a crash), so the port looks for
    what that attempt may have posted before posting again. `look_back_mark` is where that look
    begins, as an earlier attempt stored it (`keep_mark`, before its platform call), in whichever
    process it ran; None when no attempt stored one."""

    entry_id: int
    unknown_since: float | None = None
    created_at: float = 0.0
    look_back_mark: int | None = None
    keep_mark: Callable[[int], Awaitable[None]] | None = None  # stores the mark with the entry
    found: dict[int, str] = field(default_factory=dict)  # piece -> the platform's id, of an earlier attempt
    pieces_posted: int = 0  # by this attempt: when a later piece fails, the next attempt looks first
    # What a persona's post went out as, for the reactions people give it (bot/votes.py): the platform's
    # message of each piece ("slack:<channel>:<ts>", "discord:<id>"), and where a reply in its thread arrives.
    messages: list[str] = field(default_factory=list)
    reply_place: str | None = None


SENDING: ContextVar[Sending | None] = ContextVar("roundtable_outbox_sending", default=None)


def sending() -> Sending | None:
    """The outbox entry this call sends, or None for a direct call (which logs failures, never raises)."""
    return SENDING.get()


def note_piece(message: str, reply_place: str) -> None:
    """A port's note of a piece the outbox entry it sends went out as (the first piece's reply place counts)."""
    if (outbox := SENDING.get()) is not None:
        outbox.messages.append(message)
        outbox.reply_place = outbox.reply_place or reply_place


class PlatformPorts:
    def __init__(self, ports: Mapping[str, OutboundPort]) -> None:
        self.ports = dict(ports)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self.ports)

    def port_for(self, channel_key: str) -> OutboundPort:
        platform = channel_key.partition(":")[0]
        try:
            return self.ports[platform]
        except KeyError:
            raise UnknownPlatform(f"no {platform!r} platform runs in this process (channel {channel_key})") from None

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        await self.port_for(channel_key).post(channel_key, persona, text, thread)

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        await self.port_for(channel_key).notice(channel_key, text, thread)

    async def trace(self, channel_key: str, text: str) -> None:
        await self.port_for(channel_key).trace(channel_key, text)

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        await self.port_for(channel_key).show_reason(channel_key, text, thread)

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        return await self.port_for(channel_key).show_plan(channel_key, text, thread, shown_as)

    def typing(self, channel_key: str, persona: Persona) -> AbstractAsyncContextManager[None]:
        return self.port_for(channel_key).typing(channel_key, persona)

    def answering(self, channel_key: str, event_id: str | None) -> AbstractAsyncContextManager[None]:
        return self.port_for(channel_key).answering(channel_key, event_id)

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        await self.port_for(approval.channel_key).request_approval(approval, persona)

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        await self.port_for(approval.channel_key).show_decision(approval, persona)

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        await self.port_for(approval.channel_key).show_ran(approval, persona)

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        return await self.port_for(channel_key).execute(channel_key, persona, call)

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        await self.port_for(channel_key).notify_approvers(channel_key, text)
