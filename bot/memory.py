"""/memory PERSONA: what a persona present here keeps beyond its window (its summary and the notes
this channel may see, see graph/memory.py), for anyone who can read the channel; `forget N` and
`clear` correct it, for channel managers (bot/commands.py declares who), announced in the channel
and audited. A persona not present here gets a refusal: its memory is of other channels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from graph.memory import note_scope
from personas import Persona
from storage import approvals, memory
from storage.database import Database
from storage.memory import numbered

AUDITED_AS = "memory"


@dataclass(frozen=True)
class MemoryAnswer:
    text: str
    ok: bool = True
    announce: str = ""  # for the channel: a correction everyone there should know about


async def memory_command(
    db: Database,
    channel_key: str,
    personas: Mapping[str, Persona],
    present: Sequence[str],
    share_notes: str,
    *,
    persona_id: str,
    verb: str,
    number: int,
    actor: str,
) -> MemoryAnswer:
    persona = personas.get(persona_id) or next(
        (p for p in personas.values() if p.display_name.casefold() == persona_id.casefold()), None
    )
    names = ", ".join(personas[p].display_name for p in present if p in personas) or "nobody"
    if persona is None:
        return MemoryAnswer(f"{persona_id[:40]!r} keeps nothing in this channel; personas here: {names}.", ok=False)
    if persona.id not in present:
        return MemoryAnswer(f"{persona.display_name} is not in this channel; personas here: {names}.", ok=False)
    scope = note_scope(channel_key, share_notes)
    if verb == "forget":
        gone = await memory.forget_note(db, scope, persona.id, number)
        if gone is None:
            return MemoryAnswer(f"{persona.display_name} has no note {number}.", ok=False)
        news = f"{actor} removed {persona.display_name}'s note {number} ({gone.text[:80]!r})."
        await _audit(db, channel_key, persona.id, actor, f"forgot note {number}: {gone.text[:200]}")
        return MemoryAnswer(news, announce=news)
    if verb == "clear":
        notes_dropped, summary_dropped = await memory.clear(db, scope, persona.id)
        news = (
            f"{actor} cleared {persona.display_name}'s memory here: {notes_dropped} note"
            f"{'' if notes_dropped == 1 else 's'}{' and its summary' if summary_dropped else ''}."
        )
        await _audit(db, channel_key, persona.id, actor, news)
        return MemoryAnswer(news, announce=news)
    return MemoryAnswer(await report(db, channel_key, persona, scope))


async def report(db: Database, channel_key: str, persona: Persona, scope: memory.NoteScope) -> str:
    summary = await memory.summary(db, channel_key, persona.id)
    notes = await memory.notes(db, scope, persona.id)
    lines = [f"{persona.display_name}'s memory here:"]
    lines.append("Summary: " + (summary.text if summary and summary.text else "(none yet)"))
    lines.append("Notes:" if notes else "Notes: (none)")
    lines += numbered(notes)
    return "\n".join(lines)


async def _audit(db: Database, channel_key: str, persona_id: str, actor: str, detail: str) -> None:
    await approvals.audit(
        db,
        channel_key=channel_key,
        persona_id=persona_id,
        action=AUDITED_AS,
        event="executed",
        actor=actor,
        detail=detail,
    )
