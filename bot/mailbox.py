"""/mailbox: the personas' private notes in a channel, for its approvers, on every surface.

Notes never reach the channel (graph/mailbox.py), so this is how the channel's owners see what the
personas tell each other: each note's sender, recipient, text and whether it was delivered, and
per recipient how many notes wait and how many a full mailbox dropped.
"""

from __future__ import annotations

from collections.abc import Mapping

from personas import Persona
from storage import mailbox
from storage.database import Database

SHOWN_NOTES = 20  # the newest notes listed; the counts cover them all
REFUSED = "Only approvers can read the mailbox."
EMPTY = "No notes between personas here yet."


async def mailbox_report(db: Database, channel_key: str, personas: Mapping[str, Persona]) -> str:
    def name(persona_id: str) -> str:
        persona = personas.get(persona_id)
        return persona.display_name if persona else persona_id

    notes = await mailbox.recent_notes(db, channel_key, limit=SHOWN_NOTES)
    counts = await mailbox.note_counts(db, channel_key)
    if not notes and not counts:
        return EMPTY
    lines = [f"Notes between personas (the newest {SHOWN_NOTES}; only their recipients read them):"]
    lines += [
        f"- {name(n.sender_id)} → {name(n.recipient_id)}: {n.text} ({'pending' if n.pending else 'delivered'})"
        for n in notes
    ]
    if counts:
        lines.append("Per recipient:")
        lines += [
            f"- {name(recipient)}: {pending} pending, {dropped} dropped (mailbox full)"
            for recipient, (pending, dropped) in sorted(counts.items(), key=lambda item: name(item[0]))
        ]
    return "\n".join(lines)
