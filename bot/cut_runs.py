"""Start-up's answer to an action a stop cut short while it ran: look before giving up.

- A post (publish_post, send_message) is looked up by the marker unique to its approval, never by
  its text (graph/action_marks.py; on Slack, message metadata; on Discord, its place after the mark
  it noted before posting): found, it is recorded as executed;
  not found, it is posted once now; a post split into several messages posts only its missing ones.
- schedule_post is run again: it replaces the timer `post-{call_id}` the cut run may have added.
- delete_post is run again, and is done when the post is gone.
- What cannot be observed (an MCP tool's effect), or a look-up that cannot finish, leaves the outcome
  unknown, with why, for an approver to settle ([Run again] or [Close]; /approvals retry or close).

The audit entry of how each ended names start-up recovery and says which way it went; /approvals
lists them.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from datetime import datetime

from graph.action_marks import ActionRun, LookupUnfinished, acting_for
from graph.action_runner import ActionRunner
from graph.actions import ActionCall
from graph.mcp import is_mcp_action
from personas import Persona
from storage import approvals, cut_runs
from storage.database import Database
from storage.records import Approval

log = logging.getLogger(__name__)


class Settle(enum.Enum):
    LOOK_UP = "look up"  # a post: found, or posted now
    RUN_AGAIN = "run again"  # what running twice cannot double
    UNKNOWN = "unknown"  # what cannot be observed


LOOKED_UP = frozenset({"publish_post", "send_message"})
RUN_AGAIN = frozenset({"schedule_post", "delete_post"})


def settle_of(action: str) -> Settle:
    """How a cut run of `action` is settled at start-up."""
    if action in LOOKED_UP:
        return Settle.LOOK_UP
    if action in RUN_AGAIN:
        return Settle.RUN_AGAIN
    return Settle.UNKNOWN


def unobservable(action: str) -> str:
    """Why a cut run's outcome stays unknown without a look-up."""
    if is_mcp_action(action):
        return "an MCP tool's effect cannot be looked up"
    return f"what {action} did cannot be looked up"


def recovery_way(action: str, run: ActionRun) -> str:
    """How start-up finished a cut run, as its result and the audit log say it."""
    if action == "schedule_post":
        return "after the restart: scheduled again, replacing the timer the cut run may have added"
    if action == "delete_post":
        return "after the restart: deleted, or found gone"
    if run.pieces and run.found >= run.pieces:
        return "after the restart: found already posted, not posted again"
    if not run.found:
        return "after the restart: not posted before the stop, posted now"
    missing = run.pieces - run.found
    return f"after the restart: {run.found} of {run.pieces} messages had been posted, the other {missing} posted now"


async def settle_cut_run(
    db: Database, runner: ActionRunner, personas: Mapping[str, Persona], approval: Approval, gone: str
) -> Approval | None:
    """Settle one run the process `gone` left running; None when another process took it first."""
    how = settle_of(approval.action)
    persona = personas.get(approval.persona_id)
    if how is Settle.UNKNOWN or persona is None:
        why = unobservable(approval.action) if persona is not None else f"there is no persona {approval.persona_id}"
        return await approvals.mark_unknown(db, approval.id, gone, why)
    since = await cut_runs.reclaim_run(db, approval.id, gone, runner.runner_id)
    if since is None:
        return None
    run = ActionRun(approval.id, looks_first=True, since=since, mark=await cut_runs.post_mark(db, approval.id))
    call = ActionCall(call_id=approval.call_id, name=approval.action, args=approval.args)
    try:
        with acting_for(run):
            done = await _run_again(runner, approval.channel_key, persona, call)
    except LookupUnfinished as why:
        return await approvals.mark_unknown(db, approval.id, runner.runner_id, f"the look-up could not finish: {why}")
    except Exception as exc:
        log.warning("recovering approval %s failed: %s", approval.id, type(exc).__name__)
        return await cut_runs.finish_recovered(db, approval.id, ok=False, result=f"failed after the restart: {exc}")
    way = recovery_way(approval.action, run)
    return await cut_runs.finish_recovered(db, approval.id, ok=True, result=f"{done} ({way})")


async def _run_again(runner: ActionRunner, channel_key: str, persona: Persona, call: ActionCall) -> str:
    if call.name == "schedule_post":
        if runner.timers is None:
            raise RuntimeError("no scheduler is running")
        at = datetime.fromisoformat(call.args["at"]).timestamp()
        return runner.timers.schedule_post(at, channel_key, persona.id, call)
    return await runner.port.execute(channel_key, persona, call)
