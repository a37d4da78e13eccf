"""The approvals core, shared by every surface: whose approvers decide a request, what a person who
may not decide is told, how an outcome reads, and the pending list. The channel service applies
these rules; Slack (Block Kit), Discord (discord.ui) and the console only render the words."""

from __future__ import annotations

from collections.abc import Callable

from graph.actions import ActionCall
from storage.records import Approval, ApprovalStatus

PENDING_HEADING = "Pending approvals (/approve N, /reject N [feedback], /view N, /revise N {json}):"
NOTHING_PENDING = "No approvals are pending here."


def deciding_channel(approval: Approval, decided_in: str | None, surface: str) -> str:
    """The channel whose approvers decide: the request's own channel, or, for a request shown on
    another platform ([approvals] surface = "slack"), the channel where it is shown."""
    origin = approval.channel_key.partition(":")[0]
    if decided_in and surface != "same" and origin != surface and decided_in.startswith(f"{surface}:"):
        return decided_in
    return approval.channel_key


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


def wanted(approval: Approval, persona_name: str) -> str:
    """ "#3 Nova wants publish_post(channel='news', text='We launched!')"."""
    call = ActionCall(approval.call_id, approval.action, approval.args)
    return f"#{approval.id} {persona_name} wants {call.describe()}"


def outcome(approval: Approval, decider: str, at: str = "", clean: Callable[[str], str] = str) -> str:
    """How an approval stands, for people. `decider` is a mention or a name, `at` a time if shown;
    `clean` makes the action's result and the approver's feedback safe for the platform's markup."""
    when = f" at {at}" if at else ""
    if approval.original_args is not None:  # the request now shows what ran; say it is not what was asked
        when += " with edited arguments"
    result = clean(approval.result or "")
    match approval.status:
        case ApprovalStatus.EXECUTED:
            return f"Approved by {decider}{when}, executed: {result}"
        case ApprovalStatus.FAILED:
            return f"Approved by {decider}{when}, but it {result}"
        case ApprovalStatus.UNKNOWN:
            return (
                f"Approved by {decider}{when}, but {result}: it may or may not have run. "
                f"Approvers: /approvals retry {approval.id} or /approvals close {approval.id}."
            )
        case ApprovalStatus.REJECTED:
            return f"Rejected by {decider}: {clean(approval.comment or '') or 'no feedback given'}"
        case ApprovalStatus.EXPIRED:
            return "Expired: nobody decided in time."
        case ApprovalStatus.APPROVED | ApprovalStatus.RUNNING:
            return f"Approved by {decider}{when}; running it now."
    return f"Still pending (approval #{approval.id})."


def unknown_outcome_notice(approval: Approval) -> str:
    return (
        f"Approval #{approval.id} ({approval.action}) was running when the bot stopped, so it may or may not "
        f"have happened. /approvals retry {approval.id} runs it again; /approvals close {approval.id} leaves it."
    )
