"""[View] and Revise on approval requests, the words shared by every surface: the full arguments
as an approver sees them, and edited arguments read from what an approver typed and checked
against the action's own spec. Pure: no I/O. bot/approval_desk.py applies them (show_arguments,
revise); Slack, Discord and the console only carry the text."""

from __future__ import annotations

import json
from typing import Any

from graph.actions import check_call
from graph.mcp import ToolCatalog
from personas import Persona
from storage.records import Approval

FORM_HINT = "Edit the JSON; approving runs exactly these arguments."
MAX_NESTING = 32  # levels of [ and { an approver's JSON may have: deeper would exhaust json's recursion


def more_characters(count: int) -> str:
    """What ends an argument a request shows cut: how much of it is missing."""
    return f"… {count:,} more character{'s' * (count != 1)}"


def more_arguments(count: int) -> str:
    """What ends a request's list of arguments when some do not fit: how many, and where they are."""
    return f"… {count:,} more argument{'s' * (count != 1)} (View shows them all)"


def arguments_json(args: dict[str, Any]) -> str:
    """The arguments as an approver reads and edits them: indented JSON, non-ASCII kept as typed."""
    return json.dumps(args, indent=2, ensure_ascii=False)


def full_arguments(approval: Approval, persona_name: str) -> str:
    """Everything a request asks for, untruncated: the heading, then the arguments as JSON (and, once
    an approver edited them, the arguments as they were asked for)."""
    lines = [f"Approval #{approval.id}: {persona_name} wants to run {approval.action} ({approval.status})"]
    if approval.original_args is not None:
        lines += [f"Arguments, as edited by {approval.decided_by}:", arguments_json(approval.args)]
        lines += ["As requested:", arguments_json(approval.original_args)]
    else:
        lines += ["Arguments:", arguments_json(approval.args)]
    return "\n".join(lines)


def read_arguments(text: str) -> dict[str, Any] | str:
    """A JSON object typed by an approver, or why it is not one (one line)."""
    if nesting_depth(text) > MAX_NESTING:
        return f"the arguments are nested more than {MAX_NESTING} levels deep"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"the arguments are not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    if not isinstance(value, dict):
        return 'the arguments must be a JSON object, like {"channel": "news", "text": "..."}'
    return value


def nesting_depth(text: str) -> int:
    """How deep [ and { nest in JSON text (outside its strings), counted without recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def edited_arguments(
    approval: Approval, persona: Persona, args: dict[str, Any], tools: ToolCatalog | None = None
) -> dict[str, Any] | str:
    """The edited arguments checked by the action's spec (an MCP tool's: its input schema), as they
    will run (normalised, e.g. "#news" becomes "news"); or why they cannot run, in one line."""
    checked = check_call(persona, approval.call_id, approval.action, args, tools)
    if isinstance(checked, str):
        return checked.removeprefix("error: ")
    return checked.args


def pieces(text: str, limit: int) -> list[str]:
    """`text` in consecutive pieces of at most `limit` characters that join back to exactly `text`,
    cut after a line break where there is one: a message limit never silently cuts the arguments."""
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit) + 1 or limit
        parts.append(rest[:cut])
        rest = rest[cut:]
    return [*parts, rest] if rest else parts


def code_blocks(text: str, limit: int) -> list[str]:
    """`text` as code blocks of at most `limit` characters each, for platforms with a message limit.
    A "```" inside is kept from ending its block by zero-width spaces (it looks the same)."""
    safe = text.replace("```", "`\u200b`\u200b`")
    return [f"```\n{piece}```" for piece in pieces(safe, limit - len("```\n```"))]
