"""Block Kit for approvals: the request with its buttons, the same message once decided, and the
feedback and Revise modals. Pure: no I/O. Everything a persona or model wrote is escaped and clipped
(the Revise modal's JSON is plain text, and whole)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bot.approvals import outcome, request_context
from bot.revisions import FORM_HINT, arguments_json, more_arguments, more_characters
from bot.slack.keys import channel_id_of
from bot.slack.text import escape_clipped, escape_for_slack
from graph.mcp import is_mcp_action
from personas import Persona
from storage.records import Approval, ApprovalStatus

APPROVE_ACTION = "approval_approve"
APPROVE_ALWAYS_ACTION = "approval_approve_always"  # an MCP tool: approve, and run it without asking in this channel
REJECT_ACTION = "approval_reject"
FEEDBACK_ACTION = "approval_feedback"
FEEDBACK_MODAL = "approval_feedback_modal"
FEEDBACK_BLOCK = "feedback"
FEEDBACK_INPUT = "feedback_text"
FEEDBACK_MAX_CHARS = 1000
VIEW_ACTION = "approval_view"
RETRY_ACTION = "approval_retry"  # an unknown outcome: run it again (ApprovalDesk.settle_unknown)
CLOSE_ACTION = "approval_close"  # an unknown outcome: leave it, failed, without running it
REVISE_ACTION = "approval_revise"
REVISE_MODAL = "approval_revise_modal"
REVISE_BLOCK = "arguments"
REVISE_INPUT = "arguments_json"
REVISE_MAX_CHARS = 3000  # Slack's most for a plain_text_input: longer arguments are revised with /revise

SECTION_LIMIT = 3000  # Slack's limit for a section's text
ARGUMENTS_BUDGET = 2800  # of the section's 3,000: room left for the "… N more arguments" line
MIN_VALUE_CHARS = 60
CONTEXT_LIMIT = 150

Block = dict[str, Any]


def slack_time(at: float, tokens: str = "{time}") -> str:
    """A time every reader sees in their own timezone; the fallback is UTC."""
    fallback = datetime.fromtimestamp(at, tz=timezone.utc).strftime("%H:%M UTC")
    return f"<!date^{int(at)}^{tokens}|{fallback}>"


def request_text(approval: Approval, persona: Persona) -> str:
    """The message's plain text (notifications, clients without blocks)."""
    name = escape_for_slack(persona.display_name)
    revises = f" (revises #{approval.revises})" if approval.revises else ""
    return (
        f"Approval #{approval.id}: {name} wants to run {escape_for_slack(approval.action)}{revises}"
        f"{_serves(approval)}{_waits(approval)}"
    )


def request_blocks(approval: Approval, persona: Persona, *, name_the_channel: bool) -> list[Block]:
    expires = slack_time(approval.expires_at, "{date_short_pretty} at {time}")
    return [
        *_description(approval, persona, name_the_channel),
        _context(
            f"Approval #{approval.id}{_revises(approval)} · expires {expires}{_serves(approval)}{_waits(approval)}"
        ),
        {
            "type": "actions",
            "block_id": f"approval_{approval.id}",
            "elements": [
                _button("Approve", APPROVE_ACTION, approval.id, style="primary"),
                *(
                    [_button("Approve always", APPROVE_ALWAYS_ACTION, approval.id)]
                    if is_mcp_action(approval.action)
                    else []
                ),
                _button("Reject", REJECT_ACTION, approval.id, style="danger"),
                _button("Reject with feedback", FEEDBACK_ACTION, approval.id),
                _button("View", VIEW_ACTION, approval.id),
                _button("Revise", REVISE_ACTION, approval.id),
            ],
        },
    ]


def decision_blocks(approval: Approval, persona: Persona, outcome: str, *, name_the_channel: bool) -> list[Block]:
    """The request without its buttons, and how it ended (`outcome` is mrkdwn, already escaped); an
    unknown outcome offers an approver [Run again] and [Close]."""
    blocks = [
        *_description(approval, persona, name_the_channel),
        {"type": "section", "text": {"type": "mrkdwn", "text": outcome[:SECTION_LIMIT]}},
    ]
    if approval.status is ApprovalStatus.UNKNOWN:
        settle = [
            _button("Run again", RETRY_ACTION, approval.id, style="primary"),
            _button("Close", CLOSE_ACTION, approval.id),
        ]
        blocks.append({"type": "actions", "block_id": f"unknown_{approval.id}", "elements": settle})
    return blocks


def outcome_text(approval: Approval, decider: str) -> str:
    """How the approval ended, in mrkdwn; `decider` is a mention or an escaped name."""
    at = slack_time(approval.decided_at) if approval.decided_at else "an unknown time"
    return outcome(approval, decider, at, clean=lambda text: escape_clipped(text, 1000))


def feedback_modal(approval_id: int) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": FEEDBACK_MODAL,
        "private_metadata": str(approval_id),
        "title": {"type": "plain_text", "text": "Reject with feedback"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "input",
                "block_id": FEEDBACK_BLOCK,
                "label": {"type": "plain_text", "text": f"Why reject #{approval_id}? The persona reads this."},
                "element": {
                    "type": "plain_text_input",
                    "action_id": FEEDBACK_INPUT,
                    "multiline": True,
                    "max_length": FEEDBACK_MAX_CHARS,
                },
            }
        ],
    }


def revise_modal(approval: Approval) -> dict[str, Any]:
    """The arguments as JSON, ready to edit; submitting approves the edited arguments."""
    return {
        "type": "modal",
        "callback_id": REVISE_MODAL,
        "private_metadata": str(approval.id),
        "title": {"type": "plain_text", "text": f"Revise #{approval.id}"[:24]},
        "submit": {"type": "plain_text", "text": "Approve"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "input",
                "block_id": REVISE_BLOCK,
                "label": {"type": "plain_text", "text": f"{approval.action}: {FORM_HINT}"[:2000]},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REVISE_INPUT,
                    "multiline": True,
                    "max_length": REVISE_MAX_CHARS,
                    "initial_value": arguments_json(approval.args),
                },
            }
        ],
    }


def _description(approval: Approval, persona: Persona, name_the_channel: bool) -> list[Block]:
    """Who wants what: the persona's icon and name (a context block), then the arguments."""
    server, _, tool = approval.action.partition(".")
    wanted = f"*{escape_clipped(tool, 80)}* from MCP server *{escape_clipped(server, 80)}*" if tool else ""
    headline = f"*{escape_clipped(persona.display_name, 80)}* wants to run {wanted or f'*{escape_clipped(approval.action, 80)}*'}"
    channel = channel_id_of(approval.channel_key)
    if name_the_channel and channel:
        headline += f" in <#{channel}>"
    return [
        {"type": "context", "elements": [*_icon(persona), {"type": "mrkdwn", "text": headline}]},
        {"type": "section", "text": {"type": "mrkdwn", "text": _arguments(approval.args)}},
    ]


def _waits(approval: Approval) -> str:
    """Why the policy asks a person (`estimated cost 3 > max_cost 2`), when it said."""
    return f" · waits: {escape_clipped(approval.reason, CONTEXT_LIMIT)}" if approval.reason else ""


def _serves(approval: Approval) -> str:
    """The task step it serves and its risk, when it has them."""
    context = request_context(approval, lambda text: escape_clipped(text, 80))
    return f" · {context}" if context else ""


def _revises(approval: Approval) -> str:
    return f" · revises #{approval.revises}" if approval.revises else ""


def _icon(persona: Persona) -> list[Block]:
    """An image element for an icon URL; an emoji (":owl:" or a raw one) as text; nothing without an avatar."""
    if persona.avatar_is_url:
        return [{"type": "image", "image_url": persona.avatar, "alt_text": persona.display_name[:CONTEXT_LIMIT]}]
    if persona.avatar:
        return [{"type": "mrkdwn", "text": escape_clipped(persona.avatar, 40)}]
    return []


def _arguments(args: dict[str, Any]) -> str:
    """Each argument on a line, a long value cut with how much is missing; the arguments that do not
    fit are counted on a last line. [View] shows them all, whole."""
    if not args:
        return "_no arguments_"
    each = max(ARGUMENTS_BUDGET // len(args) - 50, MIN_VALUE_CHARS)
    lines: list[str] = []
    used = 0
    for index, (key, value) in enumerate(args.items()):
        line = f"*{escape_clipped(str(key), 40)}:* {_value(str(value), each)}"
        if used + len(line) > ARGUMENTS_BUDGET:
            lines.append(f"_{more_arguments(len(args) - index)}_")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _value(text: str, limit: int) -> str:
    """The escaped value in at most `limit` characters, or as much of it as fits before a note of
    how many characters are missing (cut before escaping, so no "&amp;" is split)."""
    escaped = escape_for_slack(text)
    if len(escaped) <= limit:
        return escaped
    room = limit - len(more_characters(len(text)))
    low, high = 0, min(len(text), max(room, 0))  # escaping never shrinks text
    while low < high:  # the longest prefix whose escape fits the room
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(escape_for_slack(text[:middle])) <= room else (low, middle - 1)
    return escape_for_slack(text[:low]) + more_characters(len(text) - low)


def _context(mrkdwn: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": mrkdwn}]}


def _button(label: str, action_id: str, approval_id: int, *, style: str | None = None) -> Block:
    button: Block = {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "value": str(approval_id),
    }
    if style:
        button["style"] = style
    return button
