"""The local console channel: type as a user, or replay a script, and read the transcript."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime

from bot.app import App
from bot.approvals import request_context
from bot.inbound import Inbound
from graph.action_marks import refuse_to_look
from graph.actions import ActionCall
from personas import Persona
from storage.records import Approval, ApprovalStatus

Write = Callable[[str], None]


def write_stdout(text: str) -> None:
    print(text, flush=True)


def console_key(channel: str) -> str:
    return channel if ":" in channel else f"console:{channel}"


class ConsolePort:
    """The outbound port for a terminal: one transcript line per event."""

    platforms = ("console",)  # what it serves: the outbox leaves Slack's and Discord's posts to their processes

    def __init__(self, write: Write = write_stdout, *, verbose: bool = False, user: str = "you") -> None:
        self.write = write
        self.verbose = verbose
        self.user = user
        self.interactive = write is write_stdout and sys.stdout.isatty()
        # What publish_post put up this session, (persona id, channel, text), for delete_post to take down.
        self.posts: list[tuple[str, str, str]] = []

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        self.write(f"[{persona.display_name}] {text}")

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        self.write(f"[system] {text}")

    async def trace(self, channel_key: str, text: str) -> None:
        if self.verbose:
            self.write(text)

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        self.write(text)

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        """A terminal cannot edit what it printed, so an edit reprints the whole block, marked as updated."""
        self.write(f"[plan{' updated' if shown_as else ''}]\n{text}")
        return shown_as or f"{channel_key}:plan"

    @asynccontextmanager
    async def answering(self, channel_key: str, event_id: str | None) -> AsyncIterator[None]:
        """Nothing to mark: the typing indicator shows each persona at work."""
        yield

    @asynccontextmanager
    async def typing(self, channel_key: str, persona: Persona) -> AsyncIterator[None]:
        """ "[Nova is typing…]" on a terminal, erased before the reply is printed; nothing in a script."""
        if not self.interactive:
            yield
            return
        note = f"[{persona.display_name} is typing…]"
        sys.stdout.write(note)
        sys.stdout.flush()
        try:
            yield
        finally:
            sys.stdout.write("\r" + " " * len(note) + "\r")
            sys.stdout.flush()

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        call = ActionCall(approval.call_id, approval.action, approval.args)
        expires = datetime.fromtimestamp(approval.expires_at).strftime("%H:%M")
        revises = f" (revises #{approval.revises})" if approval.revises else ""
        waits = f" - waits: {approval.reason}" if approval.reason else ""
        context = f" - {request_context(approval)}" if request_context(approval) else ""
        self.write(
            f"[approval {approval.id}] {persona.display_name} wants {call.describe()}{revises} (expires {expires})"
            f"{context}{waits}"
        )

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        match approval.status:
            case ApprovalStatus.EXECUTED:
                self.write(f"[action {approval.id}] executed: {approval.result}")
            case ApprovalStatus.FAILED:
                self.write(f"[action {approval.id}] {approval.result}")
            case ApprovalStatus.REJECTED:
                who = "you" if approval.decided_by == self.user else approval.decided_by
                self.write(f"[action {approval.id}] rejected by {who}: {approval.comment or 'no feedback'}")
            case ApprovalStatus.UNKNOWN:
                self.write(
                    f"[action {approval.id}] {approval.result}: it may or may not have run "
                    f"(/approvals retry {approval.id} runs it again, /approvals close {approval.id} leaves it)"
                )
            case ApprovalStatus.EXPIRED:
                self.write(f"[action {approval.id}] expired: nobody decided in time")

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        self.write(
            f"[action {approval.id}] ran: {ActionCall(approval.call_id, approval.action, approval.args).describe()}"
        )

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        refuse_to_look("the console's")  # what it wrote to a terminal cannot be read back
        if call.name == "publish_post":
            target = "#" + call.args["channel"].lstrip("#")
            self.write(f"[{persona.display_name} in {target}] {call.args['text']}")
            self.posts.append((persona.id, target, call.args["text"]))
            return f"posted in {target}"
        if call.name == "delete_post":
            target = "#" + call.args["channel"].lstrip("#")
            post = (persona.id, target, call.args["text"])
            if post not in self.posts:  # the console keeps no posts across a restart
                raise ValueError(f"{persona.display_name} has no post in {target} with that text")
            self.posts.remove(post)
            self.write(f"[{persona.display_name} deleted their post in {target}] {call.args['text']}")
            return f"deleted the post in {target}"
        if call.name == "send_message":
            self.write(f"[{persona.display_name} to {call.args['to']}] {call.args['text']}")
            return f"sent to {call.args['to']}"
        raise ValueError(f"the console cannot run {call.name}")

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        self.write(f"[system] approvers: {text}")


class ConsoleSession:
    def __init__(self, app: App, channel: str, write: Write = write_stdout) -> None:
        self.app = app
        self.key = console_key(channel)
        self.user = app.config.settings.bot.console_user
        self.write = write

    def banner(self) -> str:
        advice = getattr(self.app.models, "advice", "")  # the embedded model says how to get a stronger one
        line = f"[system] Roundtable console #{self.key.split(':', 1)[-1]}, model: {self.app.models.description}"
        return f"{line}. {advice}" if advice else line

    async def say(self, text: str) -> None:
        reply = await self.app.service.handle(
            Inbound(
                channel_key=self.key,
                author_id=self.user,
                author_name=self.user,
                text=text,
                tenant="console",
                private=False,  # whoever is at the console reads every console channel
            )
        )
        if reply is not None and not reply.announced:
            for line in reply.reply.splitlines():
                self.write(f"[system] {line}")

    async def run_script(self, script: str) -> None:
        """Each line of the script's text as if typed; blank lines and # comments are skipped."""
        for raw in script.splitlines():
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            self.write(f"[{self.user}] {text}" if self.user != "you" else f"[you] {text}")
            await self.say(text)
            await self.app.service.wait_idle(self.key)
        await self.app.service.approval_desk.wait_for_overdue_approvals()

    async def run_interactive(self) -> None:
        self.write("[system] Type a message, or a command (/help lists them); /quit or Ctrl-D ends.")
        async for raw in stdin_lines():
            text = raw.strip()
            if text in ("/quit", "/exit"):
                break
            if text:
                await self.say(text)
        await self.app.service.wait_idle(self.key)


async def stdin_lines() -> AsyncIterator[str]:
    """Lines typed at the console until end of input. A pipe or a terminal is read on the event
    loop, so a stop signal ends the wait at once; a regular file is read in a worker thread."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # not a pipe, socket or character device: a redirected file
        while raw := await asyncio.to_thread(sys.stdin.readline):
            yield raw
        return
    while raw_bytes := await reader.readline():
        yield raw_bytes.decode("utf-8", errors="replace")
