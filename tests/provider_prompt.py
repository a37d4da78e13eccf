"""The role-separated prompt both provider wire tests send: Nova's view of a short conversation."""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from graph.prompt import assemble_prompt, system_text
from personas import load_personas
from storage.records import Line, LineKind

SCENE = "A planning meeting for the spring launch."


def conversation() -> list[Line]:
    """Oldest first: a human, Nova herself, Sage, and a marker."""
    rows = [
        (LineKind.HUMAN, "u-ana", "Ana", "Can we ship the beta on Friday?"),
        (LineKind.PERSONA, "nova", "Nova", "Picture the bigger version of this: a public launch!"),
        (LineKind.PERSONA, "sage", "Sage", "Let us read the test results first."),
        (LineKind.MARKER, "system", "system", "Rex joined the conversation."),
    ]
    return [
        Line(
            id=i,
            channel_key="test:general",
            kind=kind,
            author_id=author_id,
            author_name=name,
            text=text,
            created_at=float(i),
        )
        for i, (kind, author_id, name, text) in enumerate(rows, start=1)
    ]


def nova_prompt() -> tuple[str, list[BaseMessage]]:
    nova = load_personas()["nova"]
    system = system_text(nova, ["Sage", "Rex", "Pixel"], SCENE)
    return system, assemble_prompt(system, reversed(conversation()), "nova", budget=4000)
