"""Start-up recovery: finish what a stop interrupted, before the platforms take new events.

- Approved actions that never ran are run, first in their channel's queue: each batch whose
  approvals are all decided is resumed (a flow that had finished resumes as a no-op), and so is each batch still
  held (storage.batches): one whose requests a stop kept from going out starts. An approved action
  no flow will run (one an approver ran again, by [Run again] or /approvals retry) is run itself.
- A run that started in a process that is gone, and was never confirmed, is looked up where it can
  be (bot/cut_runs.py): a post found is recorded as executed, one not found is posted once now; what
  cannot be told is marked unknown and reported to the approvers, never run again blindly ([Run
  again] or [Close] on the request, or /approvals retry N or close N, settles it). A `remember` or
  `note_to` commits its effect with its outcome: cut short, it had not happened, and runs now
  (graph/stored_actions.py).
- Tasks that were running continue, then every channel's round cut short by a crash goes on from
  its last committed turn, and the messages that were recorded but not answered are answered,
  oldest first, as they came.
- Each channel's summaries catch up in the background: an update cut by a stop left the previous
  summary, and runs again (graph/memory.py).
"""

from __future__ import annotations

import asyncio

from bot.approval_desk import ResumeApprovals, RunApproved
from bot.approvals import unknown_outcome_notice
from bot.cut_runs import settle_cut_run
from bot.service import AnswerInbox, ChannelService
from graph.action_runner import IMMEDIATE_BATCH
from storage import approvals, inbox, memory, rounds
from storage import batches as held_batches
from storage.records import Approval, ApprovalStatus

CONNECTS_LATER = ("discord:",)  # channel keys of a platform whose client connects after start-up
_SETTLING: set[asyncio.Task[None]] = set()  # cut runs being looked up: kept until done


async def recover(service: ChannelService) -> None:
    db = service.db
    runner = service.engine.runner.runner_id
    await db.claim(f"runner:{runner}")  # held while this process lives: its claims are alive
    cut: list[tuple[Approval, str]] = []
    for approval in await approvals.with_status(db, ApprovalStatus.RUNNING):
        owner = approval.runner or ""
        if owner != runner and await db.claim(f"runner:{owner}"):  # its process is gone
            persona = service.engine.deps.personas.get(approval.persona_id)
            if persona is not None and await service.engine.runner.resume_stored(approval, persona):
                continue  # a note: its effect commits with its outcome, so it had not happened, and runs now
            cut.append((approval, owner))
    # A Discord look-up needs the gateway (the action's channel is found in its server), which
    # connects after start-up: those are settled in the background, and their batches go on after.
    later = [(approval, owner) for approval, owner in cut if approval.channel_key.startswith(CONNECTS_LATER)]
    await _settle_cut_runs(service, [run for run in cut if run not in later], resume=False)
    if later:
        settling = asyncio.create_task(_settle_cut_runs(service, later, resume=True), name="cut runs")
        _SETTLING.add(settling)
        settling.add_done_callback(_SETTLING.discard)
    # A batch whose flow a stop cut short is still held (storage.batches): never started, or
    # decided and not yet told to its persona.
    batches: dict[str, str] = dict(await held_batches.all_held(db))
    for status in (ApprovalStatus.APPROVED, ApprovalStatus.UNKNOWN):
        for approval in await approvals.with_status(db, status):
            if status is ApprovalStatus.APPROVED and await _no_flow_runs(service, approval):
                service.enqueue(RunApproved(approval.channel_key, approval.id))  # a retry the stop cut off
            else:
                batches.setdefault(approval.batch, approval.channel_key)
    for approval, _ in later:  # goes on once its cut run is settled
        batches.pop(approval.batch, None)
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


async def _settle_cut_runs(service: ChannelService, cut: list[tuple[Approval, str]], *, resume: bool) -> None:
    """Each cut run found, finished or left unknown (bot/cut_runs.py); with `resume`, its batch's flow
    goes on after (else recover() resumes it with the others)."""
    db = service.db
    held = dict(await held_batches.all_held(db))
    resumed: dict[str, str] = {}
    for approval, owner in cut:
        settled = await settle_cut_run(db, service.engine.runner, service.personas, approval, owner)
        if settled is None:
            continue
        if settled.status is ApprovalStatus.UNKNOWN:
            await service.tell_approvers(approval.channel_key, unknown_outcome_notice(settled))
        if settled.batch.startswith(IMMEDIATE_BATCH):  # no approval flow to resume: its persona is told here
            await service.engine.show_outcome(settled)
        elif settled.status is ApprovalStatus.UNKNOWN or settled.batch in held:
            resumed.setdefault(settled.batch, settled.channel_key)
    for batch, key in resumed.items():
        if resume and not await approvals.awaits_decision(db, batch):
            service.enqueue(ResumeApprovals(key, batch))


async def _no_flow_runs(service: ChannelService, approval: Approval) -> bool:
    """Whether no approval flow will run this approved action: one run at once (no flow behind it),
    or one an approver ran again after its flow had ended (/approvals retry, [Run again])."""
    if approval.batch.startswith(IMMEDIATE_BATCH):
        return True
    snapshot = await service.engine.approval_graph.aget_state({"configurable": {"thread_id": approval.batch}})
    return bool(snapshot.values) and not snapshot.next
