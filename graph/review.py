"""Review of a persona's draft before it is posted: pure text checks.

`review_reply` checks a draft on its own (too short, a refusal, an error message); `review_draft`
checks it against the persona's window (an echo of the line it answers, or an opening that takes
it as the draft's own; a copy of any other line, its own earlier ones included), its own examples
(or a long sentence of one), the review's own note to the model, its instructions (a leak) and its
identity (speaking as someone else, or to itself by name), and never lets chat-template or tool
syntax through (graph/template_text.py); a task's answer may repeat its steps' results
(`lines_to_avoid`). A reply cut by its token limit is cut back to its last full
sentence first, and every reply to `first_sentences` ([review] max_sentences). The
same `repeats` guards task steps (graph/tasks.py) and is what bench/quality.py counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from graph.template_text import template_syntax
from graph.turn_text import RETRY_NOTE

_REFUSAL = re.compile(  # ' or ’: models write either apostrophe
    r"\b(as an ai\b|as a language model|i(?:['’]m| am) (?:sorry|afraid),? but i (?:can(?:not|['’]t)|won['’]t)|"
    r"i can(?:not|['’]t) (?:help|assist|comply|do that)|i(?:['’]m| am) (?:unable|not able) to)",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"(traceback \(most recent call last\)|^\s*error\b|\bexception:|internal server error|"
    r"\brate limit(?:ed)?\b|\bapi error\b|\bquota exceeded\b)",
    re.IGNORECASE | re.MULTILINE,
)
SIMILAR = 0.8  # normalised similarity at or above which a draft repeats a line
_MIN_CONTAINED_WORDS = 4  # a line of at least this many words found whole inside the other also repeats it
_MOSTLY = 0.6  # ... and makes at least this share of the text
# A line's name tag: "[Sage]", "Ana:", "Ana Lopez:"; not a sentence that opens with a colon.
_TAG = re.compile(r"^\s*(?:\[[^\]\n]{1,60}\]|[\w][\w.'-]{0,39}:|[A-Z][\w.'-]{0,19} [A-Z][\w.'-]{0,19}:)\s*")
_NON_WORD = re.compile(r"[^\w]+")
_SENTENCE_END = re.compile(r"[.!?…](?:[\"'”’)\]*»]*)(?=\s|$)")
# A full stop that ends no sentence: an abbreviation, an initial, a list number ("1.").
_NOT_AN_END = re.compile(r"(?i)(?:[a-z]\.)+|(?:etc|vs|approx|dr|mr|mrs|ms|st)\.")
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t]*\d{1,2}\.$")
_LEADING_BRACKETS = re.compile(r"\s*\[([^\]\n]{1,40})\]\s*(?=\S)")  # "[Nova] ..." with words after it
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|«[^»\n]*»')
# What a reply opens with before a name: a greeting, or saying yes to what it was asked.
_GREETING = (
    r"(?:hey|hi|hello|ok|okay|so|well|yes|no|right|thanks|thank you|sure|certainly|of course|absolutely|alright|great)"
)
_FINAL_CHARS = set(".!?…\"'”’)]*»~")
# Words a sentence does not end with: articles, prepositions, conjunctions, possessives.
_DANGLING = frozenset(
    "a an the and or but nor so because if than that which who whose to of in on at by for with from into"
    " about as like my your his her its our their this these those is are was were be will would can could"
    " should very".split()
)


def refuses(text: str) -> bool:
    """Whether a reply declines or steps out of character ("I can't assist with that")."""
    return bool(_REFUSAL.search(text))


def review_reply(text: str, min_chars: int) -> str | None:
    """Why a draft should be written again, or None when it may be posted."""
    stripped = text.strip()
    if len(stripped) < min_chars:
        return f"the reply was too short ({len(stripped)} characters, at least {min_chars} wanted)"
    if refuses(stripped):
        return "the reply refused or stepped out of character; answer in character"
    if _ERROR.search(stripped):
        return "the reply looked like an error message rather than a chat message"
    return None


TEMPLATE_SYNTAX = (
    "the reply held chat-template or tool syntax as text; write a plain chat line, or call the tool itself"
)
ECHO = "the reply repeated the message it answers; answer it in your own words instead"
COPY = "the reply repeated a line already said in the conversation; say something new"
EXAMPLE_COPY = "the reply copied one of your example lines; they show your voice, say something new in it"
NOTE_COPY = "the reply repeated this note instead of answering; write only your own chat line"
LEAK = "the reply talked about the chat's own instructions ({phrase!r}); talk about the topic"
OTHER_VOICE = "the reply spoke as someone else; speak only as {name}"
SELF_ADDRESS = "the reply addressed you by your own name, {name}; talk to the others"
CUT_OFF = "the reply stopped mid-sentence; finish what you say"
COPIED_SENTENCE_CHARS = 25  # a sentence at least this long, found word for word in a draft, is copied


def review_draft(
    text: str,
    *,
    window: Sequence[str],
    answered: str | None,
    own_name: str,
    other_names: Sequence[str],
    leak_phrases: Iterable[str],
    examples: Sequence[str] = (),
    note: str = "",
) -> str | None:
    """Why a draft must never be posted as it is: the checks against the window, the examples, the
    instructions and the speaker. `window` is the lines the persona saw (tags such as "Ana:" or
    "[Nova]" are ignored), `answered` the human line the turn answers, when there is one, and `note`
    the review's note the draft was written after, if any."""
    if template_syntax(text) is not None:
        return TEMPLATE_SYNTAX
    if answered is not None and (repeats(text, answered) or opens_with_line(text, answered)):
        return ECHO
    if repeats_any(text, window):
        return COPY
    if copied_example(text, examples):
        return EXAMPLE_COPY
    if repeats_review_note(text, note):
        return NOTE_COPY
    if (phrase := leaked_phrase(text, leak_phrases)) is not None:
        return LEAK.format(phrase=phrase)
    if speaks_as_other(text, own_name, other_names):
        return OTHER_VOICE.format(name=own_name)
    if addresses_itself(text, own_name):
        return SELF_ADDRESS.format(name=own_name)
    if looks_cut_off(text):
        return CUT_OFF
    return None


@lru_cache(maxsize=8192)  # a window's lines are judged again at every turn while they are in it
def normalised(text: str) -> str:
    """Casefolded words of a line without its leading name tag: what repetition is judged on."""
    return " ".join(_NON_WORD.sub(" ", _TAG.sub("", text, count=1).casefold()).split())


@dataclass(frozen=True, slots=True)
class _Form:
    """A line as repetition is judged: its normalised words in order, counted, and padded with
    spaces, so that `in` finds whole words only."""

    words: tuple[str, ...]
    counts: Counter[str]
    vocabulary: frozenset[str]
    most: int  # the most times one word occurs
    padded: str
    length: int  # of the normalised text


@lru_cache(maxsize=8192)
def _form(text: str) -> _Form:
    normal = normalised(text)
    words = tuple(normal.split())
    counts = Counter(words)
    return _Form(words, counts, frozenset(counts), max(counts.values(), default=0), f" {normal} ", len(normal))


def similar(a: str, b: str) -> bool:
    """Whether two lines are alike: at least SIMILAR of their normalised words match, in order."""
    return _similar_forms(_form(a), _form(b))


def _similar_forms(left: _Form, right: _Form) -> bool:
    total = len(left.words) + len(right.words)
    # difflib's cheap upper bounds first (real_quick_ratio, then quick_ratio), computed without
    # building its matcher: most lines of a window are nothing alike.
    if not left.words or not right.words or 2.0 * min(len(left.words), len(right.words)) / total < SIMILAR:
        return False
    shared = left.vocabulary & right.vocabulary
    if 2.0 * len(shared) * min(left.most, right.most) / total < SIMILAR:
        return False  # a bound on quick_ratio that needs no count
    if 2.0 * sum(min(left.counts[word], right.counts[word]) for word in shared) / total < SIMILAR:
        return False
    return SequenceMatcher(None, left.words, right.words, autojunk=False).ratio() >= SIMILAR


def repeats(text: str, line: str) -> bool:
    """Whether `text` repeats `line`: similar as a whole (SIMILAR), or one holds the other word for
    word, where the line held is most of the text (a reply that quotes a line to answer it does not
    repeat it)."""
    return repeats_any(text, (line,))


def repeats_any(text: str, lines: Iterable[str]) -> bool:
    """Whether `text` repeats any of `lines` (see `repeats`), the text read once for all of them: a
    draft is checked against every line of its window."""
    left = _form(text)
    if not left.words:
        return False
    holds_enough = len(left.words) >= _MIN_CONTAINED_WORDS
    for line in lines:
        right = _form(line)
        if not right.words:
            continue
        if _similar_forms(left, right):
            return True
        # One line can hold the other only when it is at least as long.
        if left.length <= right.length:
            if holds_enough and left.padded in right.padded:
                return True  # the text is a piece of the line
        elif (
            _MOSTLY * left.length <= right.length
            and len(right.words) >= _MIN_CONTAINED_WORDS
            and right.padded in left.padded
        ):
            return True
    return False


def lines_to_avoid(window: Sequence[str], gathered: Sequence[str]) -> tuple[str, ...]:
    """The window's lines a draft must not repeat. A turn that gathers results (a task's answer
    gathers its steps') may give them word for word: the lines that are one of them, or hold one
    whole (the steps' posts, the turn's own note), are its material, not lines said before."""
    results = [result for result in gathered if len(_form(result).words) >= _MIN_CONTAINED_WORDS]  # not "Done."
    if not results:
        return tuple(window)

    def gathered_in(line: str) -> bool:
        return any(repeats(line, result) or _form(result).padded in _form(line).padded for result in results)

    return tuple(line for line in window if not gathered_in(line))


def leaked_phrase(text: str, phrases: Iterable[str]) -> str | None:
    """The first phrase of the persona's instructions that the draft repeats, if any."""
    words = f" {normalised(text)} "
    return next((p for p, padded in _padded(tuple(phrases)) if padded in words), None)


@lru_cache(maxsize=64)  # the same few phrase lists, for every draft
def _padded(phrases: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((p, f" {normalised(p)} ") for p in phrases)


def speaks_as_other(text: str, own_name: str, other_names: Sequence[str]) -> bool:
    """Whether the draft claims to be the human, the system, a bot or another participant."""
    # An empty name (a follow-up has no human author) would make "I am" anything a claim.
    names = [re.escape(n) for n in other_names if n.strip() and n.casefold() != own_name.casefold()]
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


def sentence_ends(text: str) -> list[int]:
    """Where the text's sentences end: after a full stop, a "!", a "?" or an ellipsis (and any closing
    quote or bracket), followed by a space or the end; not after "e.g.", an initial or a list number,
    nor inside a quotation."""
    ends = []
    quoted = [(q.start(), q.end()) for q in _QUOTED.finditer(text)]
    for found in _SENTENCE_END.finditer(text):
        if any(start < found.start() < end - 1 for start, end in quoted):
            continue  # a quoted line's own sentences are one piece of the sentence that quotes it
        upto = text[: found.start() + 1]
        if upto.endswith(".") and (_NOT_AN_END.fullmatch(upto.rsplit(None, 1)[-1]) or _LIST_NUMBER.search(upto)):
            continue
        ends.append(found.end())
    return ends


def sentences(text: str) -> list[str]:
    """The text's sentences (what follows the last end is one too)."""
    pieces, start = [], 0
    for end in [*sentence_ends(text), len(text)]:
        if text[start:end].strip():
            pieces.append(text[start:end].strip())
        start = end
    return pieces


def first_sentences(text: str, count: int) -> str:
    """The text up to the end of its `count`th sentence: a chat line's length, never cut mid-sentence."""
    ends = sentence_ends(text)
    return text[: ends[count - 1]].rstrip() if count > 0 and len(ends) > count else text


def last_full_sentence(text: str) -> str:
    """The text up to its last complete sentence (a reply that reached the token limit); "" when no
    sentence ends in it, which the review then asks for again."""
    ends = sentence_ends(text)
    return text[: ends[-1]].rstrip() if ends else ""


def copies_a_sentence(text: str, lines: Iterable[str]) -> bool:
    """Whether the text holds, word for word, a sentence of one of the lines that is at least
    COPIED_SENTENCE_CHARS long."""
    words = f" {normalised(text)} "
    return any(sentence in words for line in lines for sentence in _long_sentences(line))


@lru_cache(maxsize=4096)  # a persona's examples are read at every turn
def _long_sentences(line: str) -> tuple[str, ...]:
    """The line's sentences of at least COPIED_SENTENCE_CHARS, normalised, each between spaces."""
    found = (sentence for sentence in sentences(_TAG.sub("", line, count=1)) if len(sentence) >= COPIED_SENTENCE_CHARS)
    return tuple(f" {normal} " for normal in map(normalised, found) if normal)


def opens_with_line(text: str, line: str) -> bool:
    """Whether the draft opens with the line, or a long sentence of it, as its own words (unquoted): a
    reply that quotes a line to answer it does not take it."""
    first = next(iter(sentences(_QUOTED.sub(" ", text))), "")
    if len(normalised(first).split()) < _MIN_CONTAINED_WORDS:
        return False  # "Good morning!" back to "Sage, good morning!" is a greeting, not an echo
    return repeats(first, line) or copies_a_sentence(first, [line])


def copied_example(text: str, examples: Sequence[str]) -> bool:
    """Whether the draft copies one of the persona's own example lines, or a long sentence of one."""
    return any(repeats(text, example) for example in examples) or copies_a_sentence(text, examples)


def _note_phrases() -> tuple[str, ...]:
    """The fixed words of every note the review writes: what no draft ever repeats."""
    reasons = (TEMPLATE_SYNTAX, ECHO, COPY, EXAMPLE_COPY, NOTE_COPY, LEAK, OTHER_VOICE, SELF_ADDRESS, CUT_OFF)
    clauses = [reason.split(";")[0].split("(")[0].split("{")[0] for reason in reasons]
    return tuple(p for p in (*clauses, *RETRY_NOTE.split("{reason}")) if len(normalised(p).split()) >= 4)


def repeats_review_note(text: str, note: str = "") -> bool:
    """Whether the draft repeats the review's note to the model: the note it was given, or the fixed
    words of any note ("Your last draft was not posted", "the reply repeated a line ...")."""
    if note and (repeats(text, note) or any(repeats(sentence, note) for sentence in sentences(text))):
        return True
    return leaked_phrase(text, _NOTE_PHRASES) is not None


def addresses_itself(text: str, own_name: str) -> bool:
    """Whether the draft opens by calling its own speaker by name ("Rex, do you ..." or "Sure, Rex."
    from Rex)."""
    own = re.escape(own_name)
    opening = re.compile(rf"^\W*(?:{_GREETING}[\s,!]+@?{own}\b\s*[,.!?:;—–-]|@?{own}\b\s*[,!?:;—–-])", re.IGNORECASE)
    return bool(opening.search(text))


def passes_on(text: str, tool_answer: str) -> bool:
    """Whether a reply carries something of what its tools answered: a number, or a word of four
    letters or more, from the answer. Such a reply is an answer however short it is."""

    def marks(line: str) -> set[str]:
        return {word for word in normalised(line).split() if word.isdigit() or len(word) >= 4}

    return bool(tool_answer) and bool(marks(text) & marks(tool_answer))


def written_as_another(draft: str, kept: str, own_name: str) -> str | None:
    """Why a draft that cut_impersonation cut to nothing is written again: it was all someone
    else's line or a system notice, and the model should hear that, not that it was short."""
    if not draft.strip() or kept:
        return None
    return f"the reply was written as another participant or a system notice; write only your own line, as {own_name}"


def cut_impersonation(text: str, own_name: str, other_names: Sequence[str]) -> str:
    """Drop a leading own name tag or a tag of nobody in the chat ("[MochaMaven] Yes, ...": the
    transcript's form, which Qwen served by llama.cpp copies), an opening sentence that only says
    yes to the persona itself ("Sure, Rex. I'll check it." from Rex: the small models answer "Ana:
    Rex, check it" so), and everything from where the draft starts another participant's line, a
    "[system]" one, or a second line of its own ("I'm still thinking. Rex: Are you sure?"): a
    persona's message must never pass for a system notice, nor read as two turns."""
    own = re.escape(own_name)
    own_tag = re.compile(rf"^\s*(?:\[{own}\]|{own}\s*:)\s*", re.IGNORECASE)
    text = own_tag.sub("", text, count=1)
    leading = _LEADING_BRACKETS.match(text)
    known = {name.casefold() for name in [*other_names, "system"]}
    if leading and leading.group(1).strip().casefold() not in known and template_syntax(leading.group(0)) is None:
        text = text[leading.end() :]  # template syntax ("[tools]", "[TOOL_CALLS]") is the review's to send back
    # Only with more after it: a draft that is nothing else is sent back (addresses_itself).
    yes_to_itself = re.compile(rf"^\W*{_GREETING}[\s,!]+@?{own}\s*[.!]+\s+(?=\S)", re.IGNORECASE)
    text = yes_to_itself.sub("", text, count=1)
    others = [re.escape(name) for name in sorted(set(other_names), key=len, reverse=True) if name.strip()]
    speaking = rf"(?:^|\n)\s*(?:{'|'.join(others)})\s*:|" if others else ""
    # The own tag again after a sentence's end: a persona never addresses itself.
    own_again = rf"(?:(?<=[.!?])|\n)\s*(?:\[{own}\]|{own}\s*:)|"
    foreign = re.compile(rf"{own_again}{speaking}\[(?:{'|'.join([*others, 'system'])})\]", re.IGNORECASE)
    match = foreign.search(text)
    return (text[: match.start()] if match else text).strip()


_NOTE_PHRASES = _note_phrases()
