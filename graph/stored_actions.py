"""Actions whose whole effect is a write to our own database: `remember` (graph/memory.py's
Notebook) and `note_to` (graph/mailbox.py).

Each is claimed before it runs, like any action that needs no approval (storage/approvals.py
`claim_immediate`, committed first), or runs under its approval's claim. Then its effect, its
outcome (the claim finished) and, for a run at once, the persona's result commit in one
transaction, and only while the claim is still running. So a stop leaves either the claim alone
(nothing was stored: start-up runs it then, `resume`) or all of it: such an action is never an
unknown outcome, never stored twice, and a turn run again after a stop reads the call's result,
never that the call waits for a person.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.actions import ActionCall
from graph.mailbox import NOTE_ACTION, Mailbox
from graph.memory import REMEMBER_ACTION, Notebook
from graph.port import OutboundPort
from personas import Persona
from storage import approvals, history
from storage.database import Database, joined, one_transaction
from storage.records import Approval, ToolCall

STORED_ACTIONS = frozenset({NOTE_ACTION, REMEMBER_ACTION})


def is_stored_action(name: str) -> bool:
    return name in STORED_ACTIONS


def failed(result: str) -> bool:
    """Whether a stored action's result says it did nothing. A note dropped from a full mailbox is an
    outcome, not a failure: the drop is recorded and the sender told."""
    return result.startswith("error")


class _FinishedElsewhere(Exception):
    """The claim was no longer running when the effect was about to commit: the effect is rolled back."""


@dataclass
class StoredActions:
    db: Database
    port: OutboundPort
    mailbox: Mailbox | None = None  # delivers note_to calls
    notebook: Notebook | None = None  # keeps remember calls

    async def _effect(self, channel_key: str, persona: Persona, call: ActionCall, thread: str | None) -> str:
        """The action's effect, written in the caller's transaction; the persona's result."""
        if call.name == NOTE_ACTION:
            return await self.mailbox.send(channel_key, persona, call) if self.mailbox else "error: no mailbox here"
        if self.notebook is None:
            return "error: no notebook"
        return await self.notebook.remember(channel_key, persona, call, thread)

    async def run(
        self,
        channel_key: str,
        persona: Persona,
        call: ActionCall,
        approval_id: int | None,
        thread: str | None,
        *,
        for_persona: bool,
    ) -> str | None:
        """Run `call` under its claim (`approval_id`, already committed as running): the effect, the
        claim's outcome and (`for_persona`) the persona's result, in one commit. None when the claim
        had been finished by someone else first: nothing is written then."""
        # Inside a caller's transaction, a rollback here would not undo what the caller wrote.
        assert joined(self.db) is None, "a stored action commits on its own"
        made = ToolCall(call.call_id, call.name, call.args)
        try:
            async with one_transaction(self.db):
                result = await self._effect(channel_key, persona, call, thread)
                ok = not failed(result)
                if (
                    approval_id is not None
                    and await approvals.finish(self.db, approval_id, ok=ok, result=result) is None
                ):
                    raise _FinishedElsewhere
                if for_persona:
                    await history.append_tool_result(self.db, channel_key, persona.id, made, result)
        except _FinishedElsewhere:
            return None
        return result

    async def resume(self, approval: Approval, persona: Persona, *, for_persona: bool) -> bool:
        """Finish a stored action whose claim a stopped process left running: its effect never
        committed (it commits with the outcome), so it runs now, once. False for any other action."""
        if not is_stored_action(approval.action):
            return False
        call = ActionCall(call_id=approval.call_id, name=approval.action, args=approval.args)
        await self.run(approval.channel_key, persona, call, approval.id, approval.thread, for_persona=for_persona)
        return True
