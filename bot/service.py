"""The channel service: dedupe, one queue per channel, and commands.

Rounds in one channel run strictly one at a time, in the order their messages arrived; different
channels run concurrently. Commands take effect at once, so `/moderate off` can stop a running round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.commands import Command, CommandError, Dismiss, Invite, ListPersonas, Moderate, SetScene, parse_command
from bot.inbound import Inbound
from graph.engine import RoundEngine
from graph.port import OutboundPort
from personas import Persona
from storage import channels, history
from storage.database import Database
from storage.records import LineKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChannelDefaults:
    participants: Sequence[str]
    moderated: bool = False


@dataclass(frozen=True)
class CommandReply:
    """`reply` goes back to whoever typed the command; changes are also announced in the channel."""

    reply: str
    ok: bool = True
    announced: bool = False  # the same news already went to the channel


class ChannelService:
    def __init__(
        self,
        *,
        db: Database,
        engine: RoundEngine,
        personas: Mapping[str, Persona],
        port: OutboundPort,
        defaults: ChannelDefaults,
    ) -> None:
        self.db = db
        self.engine = engine
        self.personas = personas
        self.port = port
        self.defaults = defaults
        self._queues: dict[str, asyncio.Queue[Inbound]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}

    async def handle(self, inbound: Inbound) -> CommandReply | None:
        """Take one inbound message: run it as a command, or record it and queue its round."""
        await self._ensure_channel(inbound.channel_key)
        try:
            command = parse_command(inbound.text)
        except CommandError as exc:
            return CommandReply(str(exc), ok=False)
        if command is not None:
            return await self.run_command(inbound.channel_key, command, thread=inbound.thread)
        line = await history.append_inbound(
            self.db, inbound.event_id, inbound.channel_key, inbound.author_id, inbound.author_name, inbound.text
        )
        if line is None:
            log.info("duplicate event %s ignored", inbound.event_id)
            return None
        self._enqueue(inbound)
        return None

    async def _ensure_channel(self, key: str) -> None:
        await channels.ensure_channel(
            self.db, key, participants=self.defaults.participants, moderated=self.defaults.moderated
        )

    def _enqueue(self, inbound: Inbound) -> None:
        key = inbound.channel_key
        self._queues.setdefault(key, asyncio.Queue()).put_nowait(inbound)
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(self._drain(key), name=f"rounds:{key}")

    async def _drain(self, key: str) -> None:
        queue = self._queues[key]
        try:
            while not queue.empty():
                inbound = queue.get_nowait()
                try:
                    await self.engine.run_round(
                        key,
                        text=inbound.text,
                        author_name=inbound.author_name,
                        mentions=list(inbound.mentions),
                        thread=inbound.thread,
                    )
                except Exception:
                    log.exception("round failed in %s", key)
                    await self._notice(key, "Something went wrong in this round; the message was kept.", inbound.thread)
        finally:
            # No await between the empty check and this: a message queued now starts a new worker.
            del self._workers[key]
            if queue.empty():
                del self._queues[key]

    async def _notice(self, key: str, text: str, thread: str | None) -> None:
        try:
            await self.port.notice(key, text, thread)
        except Exception:
            log.exception("could not post a notice in %s", key)

    async def wait_idle(self, channel_key: str | None = None) -> None:
        """Until the channel's queued rounds (or every channel's) have run."""
        while True:
            tasks = [t for k, t in self._workers.items() if channel_key in (None, k)]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- commands ------------------------------------------------------------------------------

    async def run_command(self, key: str, command: Command, *, thread: str | None = None) -> CommandReply:
        await self._ensure_channel(key)
        match command:
            case Moderate(mode="status"):
                return CommandReply(await self._moderation_status(key))
            case Moderate(mode=mode, max_turns=max_turns):
                on = mode == "on"
                await channels.set_moderated(self.db, key, on, max_turns)
                status = await self._moderation_status(key)
                await self._mark(key, f"moderation {'on' if on else 'off'}", thread, announce=status)
                return CommandReply(status, announced=True)
            case Invite(persona_id=persona_id) | Dismiss(persona_id=persona_id):
                return await self._membership(key, persona_id, isinstance(command, Invite), thread)
            case ListPersonas():
                return CommandReply(await self._persona_list(key))
            case SetScene(text=text):
                await channels.set_scene(self.db, key, text)
                announce = f"Scene set: {text}" if text else "Scene cleared."
                await self._mark(key, f"scene: {text}" if text else "scene cleared", thread, announce=announce)
                return CommandReply(announce, announced=True)
        raise AssertionError(f"unhandled command {command!r}")

    async def _mark(self, key: str, marker: str, thread: str | None, *, announce: str) -> None:
        await history.append_line(self.db, key, LineKind.MARKER, "system", "system", marker)
        await self._notice(key, announce, thread)

    async def _moderation_status(self, key: str) -> str:
        channel = await channels.get_channel(self.db, key)
        assert channel is not None
        if not channel.moderated:
            return "Moderation is off: addressed personas reply, otherwise a natural pick, once."
        turns = channel.max_turns or self.engine.deps.settings.max_turns
        return f"Moderation is on: the moderator picks who speaks next, up to {turns} turns a round."

    async def _membership(self, key: str, persona_id: str, join: bool, thread: str | None) -> CommandReply:
        persona = self.personas.get(persona_id)
        if persona is None:
            return CommandReply(f"No persona {persona_id!r}; known: {', '.join(self.personas)}", ok=False)
        text = f"{persona.display_name} {'joined' if join else 'left'}"
        changed = await history.set_membership(self.db, key, persona_id, active=join, marker_text=text)
        if not changed:
            state = "already here" if join else "not in this channel"
            return CommandReply(f"{persona.display_name} is {state}.", ok=False)
        await self._notice(key, f"{text}.", thread)
        return CommandReply(f"{text}.", announced=True)

    async def _persona_list(self, key: str) -> str:
        present = set(await channels.participants(self.db, key))
        rows = [
            f"{'*' if p.id in present else ' '} {p.id}: {p.display_name} (talkativeness {p.talkativeness:.1f})"
            for p in self.personas.values()
        ]
        return "Personas (* = in this channel):\n" + "\n".join(rows)
