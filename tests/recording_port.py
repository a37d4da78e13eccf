"""An outbound port that remembers what the engine asked of it, as a transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from graph.actions import ActionCall
from personas import Persona
from storage.records import Approval


@dataclass
class RecordingPort:
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, channel, text)
    posts: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # (channel, persona id, text, thread)
    approvals_shown: list[Approval] = field(default_factory=list)
    decisions: list[Approval] = field(default_factory=list)
    executed: list[tuple[str, str, dict]] = field(default_factory=list)
    plans: dict[str, str] = field(default_factory=dict)  # message id: the plan text it shows now

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        self.posts.append((channel_key, persona.id, text, thread))
        self.events.append(("post", channel_key, f"[{persona.display_name}] {text}"))

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        self.events.append(("notice", channel_key, f"[system] {text}"))

    @asynccontextmanager
    async def answering(self, channel_key: str, event_id: str | None) -> AsyncIterator[None]:
        yield

    @asynccontextmanager
    async def typing(self, channel_key: str, persona: Persona) -> AsyncIterator[None]:
        yield

    async def show_reason(self, channel_key: str, text: str, thread: str | None) -> None:
        self.events.append(("reason", channel_key, text))

    async def show_plan(self, channel_key: str, text: str, thread: str | None, shown_as: str | None) -> str | None:
        message_id = shown_as or f"plan-{len(self.plans) + 1}"
        self.plans[message_id] = text
        self.events.append(("plan edited" if shown_as else "plan", channel_key, text))
        return message_id

    async def trace(self, channel_key: str, text: str) -> None:
        self.events.append(("trace", channel_key, text))

    async def request_approval(self, approval: Approval, persona: Persona) -> None:
        self.approvals_shown.append(approval)
        self.events.append(
            (
                "approval",
                approval.channel_key,
                f"[approval {approval.id}] {persona.display_name} wants {approval.action}",
            )
        )

    async def show_decision(self, approval: Approval, persona: Persona) -> None:
        self.decisions.append(approval)
        self.events.append(("decision", approval.channel_key, f"[action {approval.id}] {approval.status}"))

    async def show_ran(self, approval: Approval, persona: Persona) -> None:
        self.events.append(("ran", approval.channel_key, f"[action {approval.id}] ran: {approval.action}"))

    async def execute(self, channel_key: str, persona: Persona, call: ActionCall) -> str:
        self.executed.append((persona.id, call.name, call.args))
        if call.args.get("text") == "explode":
            raise RuntimeError("the platform refused the post")
        return f"did {call.name}"

    async def notify_approvers(self, channel_key: str, text: str) -> None:
        self.events.append(("approvers", channel_key, text))

    def speakers(self, channel_key: str | None = None) -> list[str]:
        return [persona for channel, persona, _, _ in self.posts if channel_key in (None, channel)]

    def notices(self) -> list[str]:
        return [text for kind, _, text in self.events if kind == "notice"]
