"""The mailbox's engine side: `note_to`, a persona's private note to another persona present.

A note is internal to the team, not an action on the world: it is delivered at once and never goes
through the approval policy (whatever the channel's approval mode), though it counts towards the
turn's max_actions_per_turn; approvers see every note with /mailbox. It is claimed before it is
sent, and stored with its outcome in one commit (graph/stored_actions.py). It lands in the recipient's history alone, as "[note from Sage] …"; the channel, the
moderator and the other personas never see it. It is *pending* until *delivered*: until one of the
recipient's round turns has had its model answer with the note in its prompt. At most
`max_pending` notes wait for one recipient; past that a note is dropped and counted
(storage/mailbox.py), and the sender is told, so sending never blocks anyone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from graph import observe
from graph.actions import ActionCall
from personas import Persona
from storage import channels, mailbox
from storage.database import Database

NOTE_ACTION = "note_to"
NOTE_TAG = "[note from {sender}]"
_NOTE_OPENING = NOTE_TAG.split("{", 1)[0]
_LINE_ID_PREFIX = "line-"  # graph/prompt.py's message ids
_REMEMBERED = 10_000


def note_message_text(sender_name: str, text: str) -> str:
    """How a note reads in its recipient's prompt."""
    return f"{NOTE_TAG.format(sender=sender_name)} {text}"


def recipient_named(name: str, present: Sequence[Persona]) -> Persona | None:
    """The persona present whose id or display name is `name` (any case, with or without '@')."""
    wanted = name.strip().lstrip("@").strip().casefold()
    return next((p for p in present if wanted in (p.id.casefold(), p.display_name.casefold())), None)


def note_line_ids(messages: Sequence[BaseMessage]) -> list[int]:
    """The history lines of the notes in a prompt."""
    return [
        int(m.id.removeprefix(_LINE_ID_PREFIX))
        for m in messages
        if m.type == "human"  # cheaper than isinstance on a message class, on every line of every prompt
        and isinstance(m.content, str)
        and m.content.startswith(_NOTE_OPENING)
        and m.id
        and m.id.startswith(_LINE_ID_PREFIX)
    ]


@dataclass
class Mailbox:
    db: Database
    personas: Mapping[str, Persona]
    max_pending: int = 5
    # Note lines already marked delivered: a note stays in its recipient's prompts for a while,
    # and its turns need not write that again. Only a shortcut; the table is the record.
    _delivered: set[int] = field(default_factory=set)

    async def send(self, channel_key: str, sender: Persona, call: ActionCall) -> str:
        """Post the note; the sender's tool result: sent, dropped, or an error (nothing stored)."""
        present = [self.personas[p] for p in await channels.participants(self.db, channel_key) if p in self.personas]
        named = str(call.args.get("persona", ""))
        recipient = recipient_named(named, present)
        others = ", ".join(p.display_name for p in present if p.id != sender.id) or "nobody"
        if recipient is None:
            return f"error: {named[:40]!r} is not in this conversation; a note goes to a persona present: {others}"
        if recipient.id == sender.id:
            return f"error: a note goes to another persona present ({others}), not to yourself"
        posted = await mailbox.post_note(
            self.db,
            channel_key,
            sender_id=sender.id,
            sender_name=sender.display_name,
            recipient_id=recipient.id,
            text=str(call.args.get("text", "")),
            max_pending=self.max_pending,
        )
        if posted.note is None:
            observe.MAILBOX_DROPS.inc()
            return (
                f"dropped: {recipient.display_name} already has {posted.pending} unread notes (the most is "
                f"{self.max_pending}); this one was not delivered, and the drop was recorded"
            )
        return f"sent: only {recipient.display_name} reads it, at their next turn"

    async def mark_read(self, channel_key: str, recipient_id: str, messages: Sequence[BaseMessage]) -> None:
        """The recipient's turn has answered with these messages as its prompt: the notes in it are delivered."""
        fresh = [line_id for line_id in note_line_ids(messages) if line_id not in self._delivered]
        if not fresh:
            return
        await mailbox.mark_delivered(self.db, channel_key, recipient_id, fresh)
        if len(self._delivered) > _REMEMBERED:
            self._delivered.clear()
        self._delivered.update(fresh)
