"""Review of a persona's draft before it is posted: pure text checks."""

from __future__ import annotations

import re
from collections.abc import Sequence

_REFUSAL = re.compile(
    r"\b(as an ai\b|as a language model|i(?:'m| am) (?:sorry|afraid),? but i (?:can(?:not|'t)|won't)|"
    r"i can(?:not|'t) (?:help|assist|comply|do that)|i(?:'m| am) (?:unable|not able) to)",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"(traceback \(most recent call last\)|^\s*error\b|\bexception:|internal server error|"
    r"\brate limit(?:ed)?\b|\bapi error\b|\bquota exceeded\b)",
    re.IGNORECASE | re.MULTILINE,
)


def review_reply(text: str, min_chars: int) -> str | None:
    """Why a draft should be written again, or None when it may be posted."""
    stripped = text.strip()
    if len(stripped) < min_chars:
        return f"the reply was too short ({len(stripped)} characters, at least {min_chars} wanted)"
    if _REFUSAL.search(stripped):
        return "the reply refused or stepped out of character; answer in character"
    if _ERROR.search(stripped):
        return "the reply looked like an error message rather than a chat message"
    return None


def cut_impersonation(text: str, own_name: str, other_names: Sequence[str]) -> str:
    """Drop a leading own name tag, and everything from where the draft starts another participant's
    line or a "[system]" one: a persona's message must never pass for a system notice."""
    own_tag = re.compile(rf"^\s*(?:\[{re.escape(own_name)}\]|{re.escape(own_name)}\s*:)\s*", re.IGNORECASE)
    text = own_tag.sub("", text, count=1)
    others = [re.escape(name) for name in sorted(set(other_names), key=len, reverse=True)]
    speaking = rf"(?:^|\n)\s*(?:{'|'.join(others)})\s*:|" if others else ""
    foreign = re.compile(rf"{speaking}\[(?:{'|'.join([*others, 'system'])})\]", re.IGNORECASE)
    match = foreign.search(text)
    return (text[: match.start()] if match else text).strip()
