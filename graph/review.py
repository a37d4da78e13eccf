"""Review of a persona's draft before it is posted: pure text checks.

`review_reply` checks a draft on its own (too short, a refusal, an error message); `review_draft`
checks it against the persona's window (an echo of the line it answers, a copy of any other
line, its own earlier ones included), its instructions (a leak) and its identity (speaking as
someone else). A reply cut by its token limit is cut back to its last full sentence first. The same `repeats` guards task steps
(graph/tasks.py) and is what bench/quality.py counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

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
RETRY_NOTE = "[system] Your last draft was not posted: {reason}. Write it again."
SIMILAR = 0.8  # normalised similarity at or above which a draft repeats a line
_MIN_CONTAINED_WORDS = 4  # a line of at least this many words found whole inside the other also repeats it
_MOSTLY = 0.6  # ... and makes at least this share of the text
# A line's name tag: "[Sage]", "Ana:", "Ana Lopez:"; not a sentence that opens with a colon.
_TAG = re.compile(r"^\s*(?:\[[^\]\n]{1,60}\]|[\w][\w.'-]{0,39}:|[A-Z][\w.'-]{0,19} [A-Z][\w.'-]{0,19}:)\s*")
_NON_WORD = re.compile(r"[^\w]+")
_SENTENCE_END = re.compile(r"[.!?…](?:[\"'”’)\]*»]*)(?=\s|$)")
_FINAL_CHARS = set(".!?…\"'”’)]*»~")
# Words a sentence does not end with: articles, prepositions, conjunctions, possessives.
_DANGLING = frozenset(
    "a an the and or but nor so because if than that which who whose to of in on at by for with from into"
    " about as like my your his her its our their this these those is are was were be will would can could"
    " should very".split()
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


def review_draft(
    text: str,
    *,
    window: Sequence[str],
    answered: str | None,
    own_name: str,
    other_names: Sequence[str],
    leak_phrases: Iterable[str],
) -> str | None:
    """Why a draft must never be posted as it is: the checks against the window, the instructions
    and the speaker. `window` is the lines the persona saw (tags such as "Ana:" or "[Nova]" are
    ignored), and `answered` the human line the turn answers, when there is one."""
    if answered is not None and repeats(text, answered):
        return "the reply repeated the message it answers; answer it in your own words instead"
    if any(repeats(text, line) for line in window):
        return "the reply repeated a line already said in the conversation; say something new"
    if (phrase := leaked_phrase(text, leak_phrases)) is not None:
        return f"the reply talked about the chat's own instructions ({phrase!r}); talk about the topic"
    if speaks_as_other(text, own_name, other_names):
        return f"the reply spoke as someone else; speak only as {own_name}"
    if looks_cut_off(text):
        return "the reply stopped mid-sentence; finish what you say"
    return None


def normalised(text: str) -> str:
    """Casefolded words of a line without its leading name tag: what repetition is judged on."""
    return " ".join(_NON_WORD.sub(" ", _TAG.sub("", text, count=1).casefold()).split())


def similarity(a: str, b: str) -> float:
    """How alike two lines are, 0 to 1: the share of their normalised words that match, in order
    (below SIMILAR, an upper bound of it, which is cheaper)."""
    left, right = normalised(a).split(), normalised(b).split()
    if not left or not right:
        return 0.0
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    # The cheap upper bounds first: most lines of a window are nothing alike.
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return matcher.quick_ratio()
    return matcher.ratio()


def repeats(text: str, line: str) -> bool:
    """Whether `text` repeats `line`: similar as a whole (SIMILAR), or one holds the other word for
    word, where the line held is most of the text (a reply that quotes a line to answer it does not
    repeat it)."""
    left, right = normalised(text), normalised(line)
    if not left or not right:
        return False
    if similarity(left, right) >= SIMILAR:
        return True
    if len(left.split()) >= _MIN_CONTAINED_WORDS and f" {left} " in f" {right} ":
        return True  # the text is a piece of the line
    return (
        len(right.split()) >= _MIN_CONTAINED_WORDS and len(right) >= _MOSTLY * len(left) and f" {right} " in f" {left} "
    )


def leaked_phrase(text: str, phrases: Iterable[str]) -> str | None:
    """The first phrase of the persona's instructions that the draft repeats, if any."""
    words = f" {normalised(text)} "
    return next((p for p in phrases if f" {normalised(p)} " in words), None)


def speaks_as_other(text: str, own_name: str, other_names: Sequence[str]) -> bool:
    """Whether the draft claims to be the human, the system, a bot or another participant."""
    names = [re.escape(n) for n in other_names if n.casefold() != own_name.casefold()]
    who = "|".join([*names, r"(?:a |an |the )?(?:human|user|system|moderator|bot|ai|assistant)"])
    claim = re.compile(rf"\b(?:i am|i'm|im|this is|my name is|speaking as)\s+(?:{who})\b", re.IGNORECASE)
    return bool(claim.search(text))


def looks_cut_off(text: str) -> bool:
    """Whether the draft stops mid-sentence: it ends on a mark or a word no sentence ends with ("...
    always have a", "because,"). A chat line without a full stop ("thanks, team") is not cut off."""
    stripped = text.rstrip()
    if not stripped:
        return False
    last = stripped[-1]
    if last in _FINAL_CHARS or unicodedata.category(last).startswith("S"):
        return False
    if not last.isalnum():
        return True  # a comma, a dash, an opening bracket
    words = _NON_WORD.sub(" ", stripped.casefold()).split()
    return bool(words) and words[-1] in _DANGLING


def last_full_sentence(text: str) -> str:
    """The text up to its last complete sentence (a reply that reached the token limit); "" when no
    sentence ends in it, which the review then asks for again."""
    ends = list(_SENTENCE_END.finditer(text))
    return text[: ends[-1].end()].rstrip() if ends else ""


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
