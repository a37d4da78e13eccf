"""The outbound port: everything graph/ may ask of a chat platform. Each adapter implements it."""

from __future__ import annotations

from typing import Protocol

from personas import Persona


class OutboundPort(Protocol):
    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        """Post text in the channel under the persona's name and avatar."""

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        """A one-line system notice in the channel (a skipped persona, a stopped round)."""

    async def trace(self, channel_key: str, text: str) -> None:
        """Diagnostics such as moderator decisions; adapters may drop them."""
