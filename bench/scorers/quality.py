"""What the quality benchmark counts as a bad reply or a failed line: the benchmark's own text checks, written
apart from the product's review (graph/review.py) so that a review that lets a fault through is caught here.

A reply fails when it repeats the line it answers (echo) or an earlier line (copy), copies one of its
persona's example lines, holds chat-template or tool syntax, talks about the chat's machinery (a leak), is
written as someone else (a name tag, "I am Rex", calling its own speaker by name), or is empty, cut off or
looks like a system line. Four more checks ask whether a reply is worth reading: it opens by addressing
someone other than the person it answers (wrong addressee), it only says the person's line back (restates),
it answers a line nobody said, such as the review's own note (unsaid line), or it talks about its own role
or kind of character ("as a skeptic, ..."). A played line fails when nobody answered, a persona's turn was skipped with a
notice, an action was proposed on a line that asked for words, or the persona it named did not answer first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

ECHO, COPY, EXAMPLE_COPY, TEMPLATE, LEAK, WRONG_SPEAKER, BROKEN = (
    "echo",
    "copy",
    "example copy",
    "template junk",
    "leak",
    "wrong speaker",
    "empty, cut-off or system-looking",
)
WRONG_ADDRESSEE, RESTATES, UNSAID, ROLE_TALK = "wrong addressee", "restatement", "unsaid line", "role talk"
NEW_CHECKS = (WRONG_ADDRESSEE, RESTATES, UNSAID, ROLE_TALK)  # issue #55: replies worth reading
CHECKS = (ECHO, COPY, EXAMPLE_COPY, TEMPLATE, LEAK, WRONG_SPEAKER, BROKEN, *NEW_CHECKS)

SIMILAR = 0.8  # a normalised similarity at or above which one line repeats another
CONTAINED_WORDS = 4  # a line of this many words or more found whole in a reply that is mostly that line
MOSTLY = 0.6
LONG_SENTENCE = 25  # characters: an example's sentence this long, found in a reply, is copied

# Words about the chat's own machinery, which no chat line between colleagues holds.
MACHINERY = (
    "system prompt",
    "my instructions",
    "your instructions",
    "as an ai",
    "language model",
    "my persona",
    "in character",
    "group chat",
    "other participants",
    "name tag",
    "my draft",
    "your draft",
    "last draft",
    "write it again",
    "characters long",
    "private note",
    "tool call",
    "could not answer",
    "was skipped",
)
_TEMPLATE = re.compile(
    r"<\|[\w]+\|>|</?(?:start_of_turn|end_of_turn|tool_call|tool_response|tools?|function_call|think|s)>"
    r"|<function[= ]|\[/?(?:INST|TOOL_CALLS|tools?)\]|```(?:json|xml)\b|\{\s*\"(?:name|tool|action)\"\s*:",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[^\W_]+")
_TAG = re.compile(r"^\s*(?:\[([^\]\n]{1,40})\]|([A-Z][\w'.-]{0,30}):)\s*")
# Words no sentence ends on; a chat line may end without a full stop ("count me in"), but not on these.
_DANGLING = frozenset("a an the and or but because to of with from than if my your our their".split())


def words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def untagged(line: str) -> str:
    """A window line without its speaker's tag ("Nova: ..." or "[Nova] ...")."""
    return _TAG.sub("", line, count=1)


def repeats(reply: str, line: str) -> bool:
    """Whether the reply says the line again: nearly the same words, or the line's words whole inside it."""
    mine, theirs = words(reply), words(line)
    if not mine or not theirs:
        return False
    if SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= SIMILAR:
        return True
    short, long = sorted((mine, theirs), key=len)
    if len(short) < CONTAINED_WORDS or len(short) < MOSTLY * len(long):
        return False
    joined, inside = " ".join(short), f" {' '.join(long)} "
    return f" {joined} " in inside


def copies_example(reply: str, examples: Sequence[str]) -> bool:
    flat = " ".join(words(reply))
    for example in examples:
        if repeats(reply, example):
            return True
        for sentence in re.split(r"(?<=[.!?])\s+", example):
            if len(sentence) >= LONG_SENTENCE and " ".join(words(sentence)) in flat:
                return True
    return False


def leak(reply: str) -> str | None:
    padded = f" {' '.join(words(reply))} "
    return next((p for p in MACHINERY if f" {' '.join(words(p))} " in padded), None)


def wrong_speaker(reply: str, own: str, others: Sequence[str]) -> bool:
    """Written as another participant (a tag or a claim on any line), or to its own speaker by name."""
    names = [re.escape(n) for n in others if n.strip() and n.casefold() != own.casefold()]
    who = "|".join([*names, r"(?:the )?(?:system|moderator|user|human)"])
    tag = re.compile(rf"^\s*(?:\[(?:{who})\]|(?:{who})\s*:)", re.IGNORECASE | re.MULTILINE)
    claim = re.compile(rf"\b(?:i am|i'm|this is|my name is|speaking as)\s+(?:{who})\b", re.IGNORECASE)
    me = re.escape(own)
    to_self = re.compile(rf"^\W*(?:(?:sure|ok|okay|yes|hi|hey|hello|thanks|right)[\s,!]+)?@?{me}\b\s*[,.!?:;—–-]", re.I)
    return bool(tag.search(reply) or claim.search(reply) or to_self.search(reply))


def broken(reply: str) -> bool:
    """Empty, stopped mid-sentence (on a comma, a colon, "the", "because"), or looking like a system line."""
    text = reply.strip()
    if not text or text.startswith("[") or "[system]" in text.casefold():
        return True
    last = text[-1]
    if last in ",:;-–—(/&":
        return True
    said = words(text)
    return last.isalnum() and bool(said) and said[-1] in _DANGLING


# Greetings and fillers a vocative may follow at a reply's start: "Hey Sage, ...", "Well, Sage, ...".
_OPENERS = r"(?:(?:hey|hi|hello|ok|okay|sure|yes|yeah|no|oh|well|so|right|thanks|look|listen)\b[\s,!.]*)?"


def addressee(reply: str, names: Sequence[str]) -> str | None:
    """The name a reply opens by addressing ("Sage, ...", "Hey Sage, ...", "@Sage ..."), if one of `names`."""
    for name in sorted((n for n in names if n.strip()), key=len, reverse=True):
        me = re.escape(name)
        # A bare name takes a vocative's comma, dash or mark ("Sage: ..." is a name tag, the wrong speaker's);
        # "@Sage" needs only a space after it.
        opening = re.compile(rf"^\W*{_OPENERS}(?:{me}\s*[,!?—–]|{me}\s+-\s|@{me}\b(?!['’]))", re.IGNORECASE)
        if opening.search(reply):
            return name
    return None


def wrong_addressee(reply: str, asker: str, own: str, names: Sequence[str], spoke: Sequence[str] = ()) -> str | None:
    """The participant the reply opens by addressing when that is neither the person whose line it answers
    (`asker`; "" for no person's line, which no reply can get wrong) nor one who spoke since that line
    (`spoke`: a persona answered before it in the round, whose line it may take up). Its own name is the
    wrong speaker's check."""
    if not asker.strip():
        return None
    fair = {n.casefold() for n in (asker, own, *spoke)}
    return addressee(reply, [n for n in names if n.casefold() not in fair])


# Words that carry no content of their own: function words, and the chat's fillers ("what do you think?").
_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don down during each even ever every
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in
    into is isn it its itself just let me more most much must my myself no nor not now of off on once only or other
    ought our ours ourselves out over own really same shall she should shouldn so some still such than that the
    their theirs them themselves then there these they this those through to too under until up upon us very was
    wasn we were weren what when where which while who whom why will with won would wouldn yes yet you your yours
    yourself yourselves ll re ve
    hi hey hello all everyone team guys folks ok okay sure well oh yeah think thinking thought thoughts look looks
    looking sounds sound seem seems feel guess know mean say said tell like maybe perhaps actually anything something
    thing things get got going way lot one great good
    """.split()
)
MIN_CONTENT = 3  # letters: shorter words are no content
RESTATED_WORDS = 3  # content words from the answered line, at least, for a reply to say it back
RESTATED_SHARE = 0.75  # and at least this share of the reply's content words


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_CONTENT:
            return word[: -len(suffix)]
    return word


def content_words(text: str, names: Sequence[str] = ()) -> list[str]:
    """The words that carry content, crudely stemmed ("launching" -> "launch"): no function words, fillers,
    short words or participants' names."""
    dropped = _STOPWORDS | {w for n in names for w in words(n)}
    return [_stem(w) for w in words(text) if len(w) >= MIN_CONTENT and w not in dropped and not w.isdigit()]


def restates(reply: str, line: str, names: Sequence[str] = ()) -> bool:
    """Whether the reply says the line back as its own, or only repeats its words: at least RESTATED_WORDS
    of the reply's content words come from the line, and they are at least RESTATED_SHARE of them. A fair
    answer quoting a word or two of the question passes."""
    mine, theirs = set(content_words(reply, names)), set(content_words(line, names))
    if not mine:
        return False
    shared = mine & theirs
    return len(shared) >= RESTATED_WORDS and len(shared) >= RESTATED_SHARE * len(mine)


# The product review's own words, which it says only to the persona it asks again (graph/review.py,
# graph/nodes.py, the local models' turn cue); a reply that answers them answers a line nobody said.
REVIEW_MACHINERY = ("not posted", "last draft", "was skipped", "your turn", "write it again")
QUOTED_WORDS = 3  # a quotation this many words long, found nowhere in the chat, quotes a line nobody said
# A quotation is taken as something said only when words of saying or meaning frame it ("what you mean by
# "…"", "you keep saying "…""): a name or a title the reply puts forward in quotes ("Let's name it "…"")
# is its own words, not a line it answers.
_SAYING = frozenset(
    "mean means meant meaning say says said saying tell tells told telling wrote write writes written mention "
    "mentions mentioned ask asks asked note noted quote quoted quoting refer refers referring regarding claim "
    "claimed claims suggest suggested".split()
)
FRAME_WORDS = 8  # words either side of a quotation where a word of saying frames it
_QUOTED = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”|‘([^’\n]+)’|(?<![\w'])'([^'\n]+)'(?![\w'])")


def _said_in(phrase: str, lines: Sequence[str]) -> bool:
    flat = " ".join(words(phrase))
    return any(f" {flat} " in f" {' '.join(words(line))} " for line in lines)


def _paraphrased(quoted: str, lines: Sequence[str]) -> bool:
    """A quotation with its pronouns turned ("sell you on" for "sell me on"): every content word of it in one
    line; a quotation with no content word ("what you mean") quotes nothing to answer."""
    theirs = set(content_words(quoted))
    return not theirs or any(theirs <= set(content_words(line)) for line in lines)


def unsaid_line(reply: str, answered: str, window: Sequence[str] = ()) -> str | None:
    """What the reply answers that nobody said: a quotation of QUOTED_WORDS or more words, framed as said
    or meant (_SAYING), found in no window line and not in the answered line (word for word, or all its
    content words in one line), or the review's machinery (REVIEW_MACHINERY) that no line used."""
    said = [answered, *window]
    for match in _QUOTED.finditer(reply):
        quoted = next(g for g in match.groups() if g is not None)
        framing = words(reply[: match.start()])[-FRAME_WORDS:] + words(reply[match.end() :])[:FRAME_WORDS]
        if len(words(quoted)) < QUOTED_WORDS or not _SAYING.intersection(framing):
            continue
        if not _said_in(quoted, said) and not _paraphrased(quoted, said):
            return quoted
    return next((p for p in REVIEW_MACHINERY if _said_in(p, [reply]) and not _said_in(p, said)), None)


# Role nouns: the personas' kinds and what a bot may call itself, which "as a/the ..." only names as a role;
# and job nouns that a chat about hiring uses fairly ("hire her as a designer"), a role only when the reply
# speaks of itself ("as a designer, I ...", "I'm here as the moderator").
ROLE_NOUNS = (
    "skeptic sceptic cynic contrarian pessimist optimist realist idealist philosopher dreamer visionary advocate "
    "persona character ai bot chatbot"
).split()
JOB_NOUNS = "designer critic thinker assistant moderator".split()
_AS_ROLE = (
    r"(?<!such )(?<!well )(?<!same )\bas\s+(?:a|an|the|your|our|this|the\s+team['’]s|the\s+group['’]s)\s+"
    r"(?:[\w'’-]+\s+){{0,2}}?(?:{nouns})\b(?!['’\w-])"
)
_SELF = r"(?:\bi\b|\bi['’](?:m|d|ll|ve)\b|\bme\b|\bmy\b|\bmyself\b)"
_ROLE = re.compile(
    _AS_ROLE.format(nouns="|".join(ROLE_NOUNS))
    + r"|\b(?:in|from|given|by)\s+my\s+role\b|\bmy\s+role\s+(?:as|here|is|in)\b",
    re.IGNORECASE,
)
_JOB = re.compile(
    rf"(?:{_SELF}|\bspeaking)(?:\s+\w+){{0,2}}\s+{_AS_ROLE.format(nouns='|'.join(JOB_NOUNS))}"
    rf"|{_AS_ROLE.format(nouns='|'.join(JOB_NOUNS))}\s*,?\s*{_SELF}",
    re.IGNORECASE,
)


def role_talk(reply: str) -> str | None:
    """Where the reply talks about its own role or kind of character ("as a skeptic, I ...", "as the team's
    devil's advocate", "in my role as", "as a designer, I ..."); "as a team" or "as soon as" is no role."""
    found = _ROLE.search(reply) or _JOB.search(reply)
    return found.group(0) if found else None


@dataclass(frozen=True)
class Reply:
    """A persona's posted reply: who (display name), what, the line it answered, the lines before it in
    its window ("Name: text"), its persona's example lines, and who said the line it answered (a person's
    name; "" when that line was no person's)."""

    speaker: str
    text: str
    answered: str
    window: Sequence[str] = ()
    examples: Sequence[str] = ()
    asker: str = ""


def reply_problems(reply: Reply, others: Sequence[str], spoke: Sequence[str] = ()) -> list[str]:
    """Every check the reply fails; `others` are the names it must not write as (the other personas and
    the person), `spoke` who answered the same line before it."""
    found = []
    if repeats(reply.text, reply.answered):
        found.append(ECHO)
    if any(repeats(reply.text, untagged(line)) for line in reply.window):
        found.append(COPY)
    if copies_example(reply.text, reply.examples):
        found.append(EXAMPLE_COPY)
    if _TEMPLATE.search(reply.text):
        found.append(TEMPLATE)
    if leak(reply.text):
        found.append(LEAK)
    if wrong_speaker(reply.text, reply.speaker, others):
        found.append(WRONG_SPEAKER)
    if broken(reply.text):
        found.append(BROKEN)
    if wrong_addressee(reply.text, reply.asker, reply.speaker, others, spoke):
        found.append(WRONG_ADDRESSEE)
    if restates(reply.text, reply.answered, [reply.speaker, *others]):
        found.append(RESTATES)
    if unsaid_line(reply.text, reply.answered, reply.window):
        found.append(UNSAID)
    if role_talk(reply.text):
        found.append(ROLE_TALK)
    return found


def new_check_problems(problems: Sequence[str]) -> bool:
    """Whether a reply's problems hold one of the four checks of issue #55."""
    return any(p in NEW_CHECKS for p in problems)


# What a "[system]" notice holds when it is the review's machinery shown to the people (graph/nodes.py),
# not a calm line such as "Sage has no answer to that right now."
NOTICE_MACHINERY = ("could not answer", "round stopped", "was skipped")


def machinery_notice(notice: str) -> bool:
    padded = f" {' '.join(words(notice))} "
    return any(f" {' '.join(words(p))} " in padded for p in NOTICE_MACHINERY)


@dataclass(frozen=True)
class LineScore:
    problems: list[list[str]]  # per reply, in order
    unanswered: bool
    skipped: bool  # a turn was skipped with a "[system]" notice
    false_action: bool
    addressed_first: bool | None  # None when the line named nobody
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def score_line(
    replies: Sequence[Reply], addressed: Sequence[str], notices: Sequence[str], approvals: int, others_of: Sequence[str]
) -> LineScore:
    """One played line: its replies (speakers as display names), the display names it addressed in order,
    the "[system]" notices and approval requests it drew, and every name in the channel (personas, person)."""
    problems = [
        reply_problems(r, [n for n in others_of if n != r.speaker], [e.speaker for e in replies[:i]])
        for i, r in enumerate(replies)
    ]
    first = None if not addressed else bool(replies) and replies[0].speaker in addressed
    score = LineScore(problems, not replies, bool(notices), approvals > 0, first)
    failures = [f"{r.speaker}: {', '.join(p)}" for r, p in zip(replies, problems, strict=True) if p]
    failures += [label for label, bad in _line_faults(score) if bad]
    return LineScore(problems, score.unanswered, score.skipped, score.false_action, first, failures)


def _line_faults(score: LineScore) -> list[tuple[str, bool]]:
    return [
        ("unanswered", score.unanswered),
        ("a turn skipped with a notice", score.skipped),
        ("an action proposed", score.false_action),
        ("the addressed persona did not answer first", score.addressed_first is False),
    ]
