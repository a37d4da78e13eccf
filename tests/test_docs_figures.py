"""Every figure in docs/ (and the README) is one a benchmark wrote: a number quoted in a page's prose must also
stand in a bench block (`<!-- bench:NAME:start -->` ... `<!-- bench:NAME:end -->`), and every block
says when, on which commit and machine, under what load and over how many runs it was measured.

What counts as a figure (in prose: outside bench blocks, code spans, fenced code, HTML comments and
link targets): a ratio of two whole numbers ("15/22", "15 of 22"), a percentage ("93%", "+3.5%"), a
number with a unit of time, size, rate or tokens ("2.12 ms", "6 s", "253 MB", "72 tokens/s"), a
multiple ("×34", "2×"), and any decimal number ("0.85"). What does not: whole numbers on their own
("200 messages", "step 4", "port 8080", a numbered list or section), numbers joined to letters or
hyphens ("Qwen2.5", "1.5B", "270M", "SHA-256", "part22"), versions ("3.11.7", "Python 3.11",
"autogen-agentchat 0.7" written as code), dates and clock times ("2026-11-28", "04:02"), and anything
in code, where config values, defaults and commands belong. Words for numbers ("two hours") are not
read: the rule is a guard against quoting a run's result, not a parser of English.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BENCHMARKS_MAX_LINES = 400  # a reference: method, current blocks, how to reproduce; history is in git

# Blocks that no run of their current benchmark has written yet, with the fields each may still lack.
# models-quality needs `make bench-models` (every model setup in turn) and says so in words, with no
# figure; the task transcript holds no figure and is from a run of bench/tasks.py made before transcripts
# opened with their run's stamp. A block leaves this list when its benchmark rewrites it (a stale entry
# fails the test below).
PENDING_BLOCKS: dict[str, frozenset[str]] = {
    "models-quality": frozenset({"date", "commit", "machine", "load", "runs"}),
    "task-transcript": frozenset({"date", "commit", "machine", "load", "runs"}),
}

# A marker stands on a line of its own (as rewrite_block writes it); one quoted in prose does not.
BLOCK = re.compile(r"^<!-- bench:([\w-]+):start -->$(.*?)^<!-- bench:\1:end -->$", re.DOTALL | re.MULTILINE)
NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten"
# What a block must say about its run: the date, the commit, the machine, its load, how many runs.
PROVENANCE = {
    "date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "commit": re.compile(r"\bcommit\b\W{0,3}[0-9a-f]{7,40}\b", re.IGNORECASE),
    "machine": re.compile(r"\bMachine:", re.IGNORECASE),
    "load": re.compile(r"\bload\W{0,3}\d", re.IGNORECASE),
    "runs": re.compile(rf"\b(\d+|{NUMBER_WORDS}) runs?\b|\bruns?\W{{0,3}}\d+", re.IGNORECASE),
}

# Not prose: fenced code, code spans, HTML comments, a link's target, a bare address.
NOT_PROSE = [
    re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.DOTALL | re.MULTILINE),
    re.compile(r"<!--.*?-->", re.DOTALL),
    re.compile(r"(`+).+?\1", re.DOTALL),
    re.compile(r"\]\([^)\s]*\)"),
    re.compile(r"https?://\S+"),
]

NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# A number standing on its own: not joined to a letter, digit, hyphen-word or another dot-part.
ALONE_BEFORE = r"(?<![\w.\-/:])"
ALONE_AFTER = r"(?![\w]|\.\d|-\w|:\d|/\d)"
UNITS = (
    r"ns|µs|us|ms|s|sec|secs|seconds?|mins?|minutes?|hrs?|hours?|"
    r"KB|kB|KiB|MB|MiB|GB|GiB|TB|tokens?(?:/s)?|/s|calls?/s|lines?/s|answers? a second|(?:a|per) second"
)
# One-letter units other than seconds only after a space: "1.5B" and "3h" name a model's size or a slot.
SPACED_UNITS = r"B|h"
FIGURES = [
    ("ratio", re.compile(rf"{ALONE_BEFORE}(\d+)\s*/\s*(\d+){ALONE_AFTER}")),
    ("ratio", re.compile(rf"{ALONE_BEFORE}(\d+) (?:of|out of)(?: the)? (\d+){ALONE_AFTER}")),
    ("percent", re.compile(rf"{ALONE_BEFORE}[+−-]?({NUM})\s*(?:%|per ?cent\b)")),
    ("multiple", re.compile(rf"×\s*({NUM}){ALONE_AFTER}|{ALONE_BEFORE}({NUM})×")),
    ("quantity", re.compile(rf"{ALONE_BEFORE}({NUM})(?:[\s\u00a0]?(?:{UNITS})|[\s\u00a0](?:{SPACED_UNITS}))(?![\w/])")),
    ("decimal", re.compile(rf"{ALONE_BEFORE}(\d+\.\d+){ALONE_AFTER}")),
]
VERSION_BEFORE = re.compile(r"(?:\bPython|\bversion|\bv|==|>=|<=)\s*$", re.IGNORECASE)
CAPITALISED_BEFORE = re.compile(r"\b[A-Z][\w-]* $")
CAPITALISED_AFTER = re.compile(r" [A-Z]")


def in_a_name(text: str, match: re.Match[str]) -> bool:
    """A decimal between two capitalised words is a product's version ("Gemini 3.8 Flash")."""
    return bool(CAPITALISED_BEFORE.search(text, 0, match.start()) and CAPITALISED_AFTER.match(text, match.end()))


@dataclass(frozen=True)
class Figure:
    text: str
    numbers: tuple[str, ...]  # normalised: "12,000" -> "12000", "2.10" -> "2.1"; a ratio "15/22"
    line: int
    at: int


def normalise(number: str) -> str:
    plain = number.replace(",", "")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain.lstrip("0") or "0"


def blank(text: str, start: int, end: int) -> str:
    """`text` with [start, end) turned to spaces, newlines kept, so line numbers still hold."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def prose(text: str) -> str:
    """The page with bench blocks and everything that is not prose blanked out."""
    for pattern in [BLOCK, *NOT_PROSE]:
        for match in reversed(list(pattern.finditer(text))):
            text = blank(text, match.start(), match.end())
    return text


def figures(text: str) -> list[Figure]:
    """The figures in `text` (already prose), each once, the earliest kind that claims it winning."""
    found: list[Figure] = []
    taken: list[range] = []
    for kind, pattern in FIGURES:
        for match in pattern.finditer(text):
            span = range(match.start(), match.end())
            if any(span.start < t.stop and t.start < span.stop for t in taken):
                continue
            if kind == "decimal" and (VERSION_BEFORE.search(text[: match.start()]) or in_a_name(text, match)):
                continue
            groups = [g for g in match.groups() if g]
            numbers = ("/".join(normalise(g) for g in groups),) if kind == "ratio" else tuple(map(normalise, groups))
            line = text.count("\n", 0, match.start()) + 1
            found.append(Figure(match.group(0).strip(), numbers, line, match.start()))
            taken.append(span)
    return sorted(found, key=lambda f: f.at)


def block_numbers(body: str) -> set[str]:
    """Every number a block holds, normalised, and each of its ratios as "a/b" (also from "a of b")."""
    numbers = {normalise(n) for n in re.findall(NUM, body)}
    for kind, pattern in FIGURES:
        if kind == "ratio":
            numbers |= {f"{normalise(a)}/{normalise(b)}" for a, b in pattern.findall(body)}
    return numbers


def unquoted(figures_found: list[Figure], known: set[str]) -> list[Figure]:
    return [f for f in figures_found if not set(f.numbers) <= known]


def pages() -> dict[str, str]:
    """Every docs page, and the README that links into them."""
    paths = [*sorted(DOCS.rglob("*.md")), REPO / "README.md"]
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def all_blocks() -> dict[str, str]:
    found: dict[str, str] = {}
    for page, text in pages().items():
        for name, body in BLOCK.findall(text):
            assert name not in found, f"{page}: a second {name} block"
            found[name] = body
    return found


def in_prose(text: str) -> list[str]:
    return [f.text for f in figures(prose(text))]


# The detector on its own: what it must catch, and what it must leave alone.


def test_the_detector_catches_figures_quoted_in_prose() -> None:
    assert in_prose("Tool answers reached the person 15/22 times.") == ["15/22"]
    assert in_prose("the fact reached the person 14 of 22 times") == ["14 of 22"]
    assert in_prose("recall 93% and +3.5% overhead") == ["93%", "+3.5%"]
    assert in_prose("a turn took 2.12 ms, p99 3.76 ms") == ["2.12 ms", "3.76 ms"]
    assert in_prose("a reply 0.85 s of model time, a cold one 6 s") == ["0.85 s", "6 s"]
    assert in_prose("2.38 times AutoGen's turn") == ["2.38"]
    assert in_prose("confidence 0.9 ×34, and 3× faster") == ["0.9", "×34", "3×"]
    assert in_prose("prompt evaluation 72 tokens/s over 407 tokens, 253 MB, 24 GiB") == [
        "72 tokens/s",
        "407 tokens",
        "253 MB",
        "24 GiB",
    ]
    assert in_prose("| run | 2/100 | 1.8 s |") == ["2/100", "1.8 s"]
    assert in_prose("## Why 2.38× is the figure") == ["2.38×"]
    assert in_prose("up to 12,000 tokens, a 400 B file, 3 h") == ["12,000 tokens", "400 B", "3 h"]


def test_the_detector_leaves_names_versions_dates_code_and_plain_counts_alone() -> None:
    for text in [
        "Qwen2.5-Coder-1.5B-Instruct and Gemma 3 270M, Q4_K_M, SHA-256, part22, a 1.5B model",
        "Python 3.11.7 on Linux, Python 3.11+, version 0.7, Gemini 3.8 Flash",
        "measured 2026-11-28 at 04:02 UTC",
        "1. Plan the work\n2. Run it\n## 3. Results",
        "200 messages in one channel with 3 personas, step 4, port 8080",
        "set `min_confidence = 0.6` or `timeout = 30 s` in config.toml",
        "```toml\n[llm.local]\nthreads = 2  # 1.5 s\n```",
        "see [the table](benchmarks.md#v2.1) or https://example.com/a/1.5/2",
        "<!-- 15/22 in a comment -->",
        "<!-- bench:x:start -->\n15/22, 2.12 ms\n<!-- bench:x:end -->",
        "the host 127.0.0.1 and docs/models.md",
        "the first 22 lines, ten requests, one run",
    ]:
        assert in_prose(text) == [], text


def test_a_figure_is_quoted_when_a_block_holds_its_numbers() -> None:
    known = block_numbers("| tool called | 15/22 = 68% |\n| time | 7.17 s | 12,000 tokens |")
    assert unquoted(figures("called 15/22 times (68%), 7.17 s a line, 12000 tokens"), known) == []
    assert [f.text for f in unquoted(figures("called 16/22 times, 7.2 s"), known)] == ["16/22", "7.2 s"]
    # A ratio must be quoted whole: both of its numbers standing apart in a block is not enough.
    assert [f.text for f in unquoted(figures("15 of 68"), known)] == ["15 of 68"]


def test_a_block_without_its_run_s_provenance_is_caught() -> None:
    full = "Machine: Xeon, 2 cores, 2026-12-01 10:00 UTC, commit 113a07a, 1-minute load 0.2; 5 runs, median."
    assert [k for k, p in PROVENANCE.items() if not p.search(full)] == []
    assert [k for k, p in PROVENANCE.items() if not p.search("| metric | 15/22 |")] == list(PROVENANCE)


# The docs as they are.


def test_every_figure_in_the_docs_prose_stands_in_a_bench_block() -> None:
    known: set[str] = set()
    for body in all_blocks().values():
        known |= block_numbers(body)
    stray = [
        f"{page}:{f.line}: {f.text}" for page, text in pages().items() for f in unquoted(figures(prose(text)), known)
    ]
    assert stray == [], "figures no benchmark wrote (move them into a block, or drop them):\n" + "\n".join(stray)


def test_the_benchmarks_page_stays_a_short_reference() -> None:
    assert len((DOCS / "benchmarks.md").read_text(encoding="utf-8").splitlines()) < BENCHMARKS_MAX_LINES


def test_every_bench_block_says_when_where_on_what_commit_and_over_how_many_runs() -> None:
    missing = {}
    for name, body in all_blocks().items():
        lacks = {field for field, pattern in PROVENANCE.items() if not pattern.search(body)}
        if lacks - PENDING_BLOCKS.get(name, frozenset()):
            missing[name] = sorted(lacks)
    assert missing == {}


def test_the_pending_list_names_only_blocks_that_still_lack_something() -> None:
    blocks = all_blocks()
    stale = {
        name
        for name, allowed in PENDING_BLOCKS.items()
        if name not in blocks or not any(not PROVENANCE[field].search(blocks[name]) for field in allowed)
    }
    assert stale == set(), "these blocks now carry every field: take them off PENDING_BLOCKS"
