"""The approvals core, shared by every surface: whose approvers decide a request, what a person who
may not decide is told, how an outcome reads, and the pending list. The channel service applies
these rules; Slack (Block Kit), Discord (discord.ui) and the console only render the words. An
outcome's wording (`outcome`) is graph.approval_flow's, since the persona reads the same words as
its call's result."""

from __future__ import annotations

from collections.abc import Callable

from graph.actions import ActionCall
from graph.approval_flow import outcome as outcome  # the one wording of an outcome, for the renderers
from storage.records import Approval, ApprovalStatus

PENDING_HEADING = "Pending approvals (/approve N, /reject N [feedback], /view N, /revise N {json}):"
NOTHING_PENDING = "No approvals are pending here."
UNKNOWN_HEADING = "Outcome unknown (the bot stopped while they ran; never run again by themselves):"
GRANTS_HEADING = "Tools approved always here (/approvals forget SERVER.TOOL makes one wait again):"


def deciding_channel(approval: Approval, decided_in: str | None, surface: str) -> str:
    """The channel whose approvers decide: the request's own channel, or, for a request shown on
    another platform ([approvals] surface = "slack"), the channel where it is shown."""
    origin = approval.channel_key.partition(":")[0]
    if decided_in and surface != "same" and origin != surface and decided_in.startswith(f"{surface}:"):
        return decided_in
    return approval.channel_key


def elsewhere(approval_id: int) -> str:
    """The one line that refuses a decision, a view or a revision of a request from another channel
    (typed there, or a button pressed on a message shown there)."""
    return f"Approval #{approval_id} belongs to another channel."


def refusal(approval: Approval | None, approval_id: int, *, may_decide: bool) -> str | None:
    """Why a decision cannot be taken now, in one line; None when it can."""
    if approval is None:
        return f"There is no approval #{approval_id}."
    if not may_decide:
        return f"Only approvers can decide; #{approval_id} stays pending."
    if approval.status is not ApprovalStatus.PENDING:
        return already_decided(approval)
    return None


def already_decided(approval: Approval) -> str:
    return f"Approval #{approval.id} was already decided ({approval.status})."


def wanted(approval: Approval, persona_name: str, clean: Callable[[str], str] = str) -> str:
    """ "#3 Nova wants publish_post(channel='news', text='We launched!') (risk high)"; `clean` makes the call
    safe for markup."""
    call = ActionCall(approval.call_id, approval.action, approval.args)
    context = request_context(approval, clean)
    return f"#{approval.id} {persona_name} wants {clean(call.describe())}" + (f" ({context})" if context else "")


def serves(approval: Approval, clean: Callable[[str], str] = str) -> str:
    """ "Step 2 of 4 of task #7 “Launch post”": the task step a request serves; "" outside a task."""
    task = approval.task
    return f"Step {task.step} of {task.steps} of task #{task.task_id} “{clean(task.title)}”" if task else ""


def request_context(approval: Approval, clean: Callable[[str], str] = str) -> str:
    """What a request is for and how risky it is, in the one wording every surface shows beside it:
    "Step 2 of 4 of task #7 “Launch post” · risk high" (either part left out when it has none)."""
    risk = f"risk {approval.risk}" if approval.risk else ""
    return " · ".join(part for part in (serves(approval, clean), risk) if part)


def unknown_outcome_line(approval: Approval, persona_name: str, clean: Callable[[str], str] = str) -> str:
    """ "#4 Rex ran notes.write_note(...): outcome unknown" for /approvals, with how to settle it."""
    call = ActionCall(approval.call_id, approval.action, approval.args)
    why = f" ({clean(reason)})" if (reason := unknown_why(approval)) else ""
    return (
        f"#{approval.id} {persona_name} ran {clean(call.describe())}: outcome unknown{why}, it may or may not have "
        f"happened (/approvals retry {approval.id} or /approvals close {approval.id})"
    )


def unknown_outcome_notice(approval: Approval) -> str:
    why = unknown_why(approval)
    return (
        f"Approval #{approval.id} ({approval.action}) was running when the bot stopped, so it may or may not "
        f"have happened{f' ({why})' if why else ''}. [Run again] on its request or /approvals retry {approval.id} "
        f"runs it again; [Close] or /approvals close {approval.id} leaves it."
    )


def unknown_why(approval: Approval) -> str:
    """Why an unknown outcome could not be told, as start-up recorded it ("" when it did not say)."""
    result = approval.result or ""
    return result[result.index("(") + 1 : -1] if result.endswith(")") and "(" in result else ""
