"""An outbound port that remembers what the engine asked of it, as a transcript."""

from __future__ import annotations

from dataclasses import dataclass, field

from personas import Persona


@dataclass
class RecordingPort:
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, channel, text)
    posts: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # (channel, persona id, text, thread)

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        self.posts.append((channel_key, persona.id, text, thread))
        self.events.append(("post", channel_key, f"[{persona.display_name}] {text}"))

    async def notice(self, channel_key: str, text: str, thread: str | None) -> None:
        self.events.append(("notice", channel_key, f"[system] {text}"))

    async def trace(self, channel_key: str, text: str) -> None:
        self.events.append(("trace", channel_key, text))

    def speakers(self, channel_key: str | None = None) -> list[str]:
        return [persona for channel, persona, _, _ in self.posts if channel_key in (None, channel)]

    def notices(self) -> list[str]:
        return [text for kind, _, text in self.events if kind == "notice"]
