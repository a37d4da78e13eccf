"""Start-up recovery: finish what a stop interrupted, before the platforms take new events.

- Approved actions that never ran are run: each batch whose approvals are all decided is resumed in
  its channel's queue (a flow that had finished resumes as a no-op), and so is each batch still
  held (storage.batches): one whose requests a stop kept from going out starts.
- A run that started in a process that is gone, and was never confirmed, is marked unknown and
  reported to the approvers, never run again blindly (/approvals retry N or close N settles it);
  except a `remember` or `note_to`, whose effect commits with its outcome: it had not happened, and
  runs now (graph/stored_actions.py).
- Tasks that were running continue, then every channel's round cut short by a crash goes on from
  its last committed turn, and the messages that were recorded but not answered are answered,
  oldest first, as they came.
- Each channel's summaries catch up in the background: an update cut by a stop left the previous
  summary, and runs again (graph/memory.py).
"""

from __future__ import annotations

from bot.approval_desk import ResumeApprovals
from bot.approvals import unknown_outcome_notice
from bot.service import AnswerInbox, ChannelService
from graph.action_runner import IMMEDIATE_BATCH
from storage import approvals, inbox, memory, rounds
from storage import batches as held_batches
from storage.records import ApprovalStatus


async def recover(service: ChannelService) -> None:
    db = service.db
    runner = service.engine.runner.runner_id
    await db.claim(f"runner:{runner}")  # held while this process lives: its claims are alive
    for approval in await approvals.with_status(db, ApprovalStatus.RUNNING):
        owner = approval.runner or ""
        if owner != runner and await db.claim(f"runner:{owner}"):  # its process is gone
            persona = service.engine.deps.personas.get(approval.persona_id)
            if persona is not None and await service.engine.runner.resume_stored(approval, persona):
                continue  # a note: its effect commits with its outcome, so it had not happened, and runs now
            marked = await approvals.mark_unknown(db, approval.id, owner)
            if marked is not None:
                await service.tell_approvers(approval.channel_key, unknown_outcome_notice(approval))
                if marked.batch.startswith(IMMEDIATE_BATCH):  # no approval flow to resume: its persona is told here
                    await service.engine.show_outcome(marked)
    # A batch whose flow a stop cut short is still held (storage.batches): never started, or
    # decided and not yet told to its persona.
    batches: dict[str, str] = dict(await held_batches.all_held(db))
    for status in (ApprovalStatus.APPROVED, ApprovalStatus.UNKNOWN):
        for approval in await approvals.with_status(db, status):
            batches.setdefault(approval.batch, approval.channel_key)
    for batch, key in batches.items():
        if not await approvals.awaits_decision(db, batch):
            service.enqueue(ResumeApprovals(key, batch))
    await service.tasks.resume_all()  # before the channels' waiting messages, as they came first
    # A round cut short by a crash goes on from its last committed turn (storage.rounds), before
    # the channel's next waiting message.
    for key in sorted({*await rounds.channels_running(db), *await inbox.channels_waiting(db)}):
        service.enqueue(AnswerInbox(key))
    for key in sorted({key for key, _ in await memory.channels_with_participants(db)}):
        service.engine.memory.after_round(key)
