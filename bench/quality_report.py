"""What bench/quality.py found: each played line with its replies, the checks a reply fails (by the
definitions of graph/review.py and graph/template_text.py), and the tables it prints and writes."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from bench.report import machine
from graph.models.gguf import DEFAULT_LOCAL_MODEL
from graph.prompt import INSTRUCTION_PHRASES
from graph.review import addresses_itself, copied_example, leaked_phrase, looks_cut_off, repeats, speaks_as_other
from graph.template_text import template_syntax

HUMAN = "Ana"  # who says every labelled line


@dataclass
class Reply:
    persona: str
    text: str
    answered: str
    window: list[str]
    seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass
class Judged:
    """The judge's verdicts: on replies the text checks passed, and on echoes and copies they catch."""

    replies: Counter[str] = field(default_factory=Counter)
    made_copies: Counter[str] = field(default_factory=Counter)  # echoes and copies made from the lines
    seconds: list[float] = field(default_factory=list)
    failed: int = 0  # no verdict


@dataclass
class Played:
    kind: str
    text: str
    moderated: bool
    addressed: list[str]
    replies: list[Reply]
    false_action: bool
    notices: list[str]

    @property
    def addressed_first(self) -> bool | None:
        if not self.addressed:
            return None
        return bool(self.replies) and self.replies[0].persona in self.addressed


def problems_of(reply: Reply, names: dict[str, str], examples: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Every check a reply fails."""
    found = []
    others = [name for pid, name in names.items() if pid != reply.persona] + [HUMAN]
    text = reply.text
    if repeats(text, reply.answered):
        found.append("echo")
    if any(repeats(text, line) for line in reply.window):
        found.append("copy")
    if copied_example(text, (examples or {}).get(reply.persona, ())):
        found.append("example copy")
    if template_syntax(text):
        found.append("template junk")
    if leaked_phrase(text, INSTRUCTION_PHRASES):
        found.append("leak")
    own = names[reply.persona]
    if (
        speaks_as_other(text, own, others)
        or text.lstrip().startswith(tuple(f"{o}:" for o in others))
        or addresses_itself(text, own)  # "Sure, Nova." from Nova: written as the one who asked her
    ):
        found.append("wrong speaker")
    if not text.strip() or looks_cut_off(text) or text.lstrip().startswith("[") or "[system]" in text.casefold():
        found.append("empty, cut-off or system-looking")
    return found


def judge_table(judged: Judged) -> str:
    def share(tally: Counter[str], ok: bool) -> str:
        total = sum(tally.values())
        count = tally["ok"] if ok else total - tally["ok"]
        return f"{count}/{total} = {count / max(total, 1):.0%}"

    per_call = sum(judged.seconds) / max(len(judged.seconds), 1)
    verdicts = ", ".join(f"{v} {n}" for v, n in (judged.replies + judged.made_copies).most_common())
    return "\n".join(
        [
            '| the judge (the same model, `[review] judge = "on"`) | measured |',
            "| --- | --- |",
            f"| rejects a reply the text checks passed | {share(judged.replies, ok=False)} |",
            f"| agrees with the text checks on an echo or a copy (rejects it) | {share(judged.made_copies, ok=False)} |",
            f"| answered no verdict | {judged.failed}/{len(judged.seconds)} |",
            f"| time per verdict | {per_call:.2f} s |",
            "",
            f"Verdicts: {verdicts}.",
        ]
    )


CHECKS = ("echo", "copy", "example copy", "template junk", "leak", "wrong speaker", "empty, cut-off or system-looking")


def comparison_table(runs: list[tuple[str, dict[str, list[Played]]]], seconds: float, load: float) -> str:
    """One row per setup: each check's count among its replies, unanswered and addressed-first lines, and
    the wall seconds per reply (moderator decisions and review rewrites included)."""
    labels = ("echoes", "copies", "example copies", "template junk", "leaks", "wrong speakers", "cut-offs")
    head = ["setup", "replies", *labels, "unanswered", "addressed first", "s per reply"]
    rows = []
    for name, results in runs:
        played = [p for lines in results.values() for p in lines]
        replies = [r for p in played for r in p.replies]
        counts = Counter(problem for r in replies for problem in r.problems)
        addressed = [p for p in played if p.addressed]
        first = sum(1 for p in addressed if p.addressed_first)
        per_reply = sum(r.seconds for r in replies) / max(len(replies), 1)
        cells = [
            name,
            str(len(replies)),
            *(str(counts[c]) for c in CHECKS),
            f"{sum(1 for p in played if not p.replies)}/{len(played)}",
            f"{first}/{len(addressed)}",
            f"{per_reply:.1f}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    lines_played = sum(len(lines) for lines in runs[0][1].values()) if runs else 0
    return "\n".join(
        [
            f"Machine: {machine(load)}. {lines_played} human lines in {len(runs[0][1]) if runs else 0} new console "
            f"channels per setup, default config, {seconds:.0f} s in all.",
            "",
            "| " + " | ".join(head) + " |",
            "|" + " --- |" * len(head),
            *rows,
        ]
    )


def quality_table(
    results: dict[str, list[Played]], seconds: float, load: float, model: str = DEFAULT_LOCAL_MODEL
) -> tuple[str, dict[str, float]]:
    played = [p for lines in results.values() for p in lines]
    replies = [r for p in played for r in p.replies]
    counts = Counter(problem for r in replies for problem in r.problems)
    total = max(len(replies), 1)
    unanswered = sum(1 for p in played if not p.replies)
    addressed = [p for p in played if p.addressed]
    first = sum(1 for p in addressed if p.addressed_first)
    false_actions = sum(1 for p in played if p.false_action)
    moderated = sum(1 for lines in results.values() if lines and lines[0].moderated)
    per_reply = sum(r.seconds for r in replies) / total
    figures = {
        **{check: counts[check] / total for check in CHECKS},
        "unanswered": unanswered / max(len(played), 1),
        "addressed first": first / max(len(addressed), 1),
    }

    def row(metric: str, count: int, of: int, target: str, met: bool) -> str:
        return f"| {metric} | {count}/{of} = {count / max(of, 1):.0%} | {target} ({'met' if met else 'missed'}) |"

    lines = [
        f"Machine: {machine(load)}. {len(played)} human lines in {len(results)} new console channels "
        f"({moderated} moderated), default config, embedded {model}, {seconds:.0f} s; "
        f"{len(replies)} replies, {per_reply:.1f} s per reply.",
        "",
        "| metric | measured | target |",
        "| --- | --- | --- |",
        *(row(f"{check} replies", counts[check], len(replies), "0", counts[check] == 0) for check in CHECKS),
        row(
            "false actions (a proposal on a line asking for words)", false_actions, len(played), "0", not false_actions
        ),
        row("unanswered human lines", unanswered, len(played), "≤ 5%", unanswered <= 0.05 * len(played)),
        row("addressed persona answered first", first, len(addressed), "all", first == len(addressed)),
    ]
    by_kind: dict[str, list[Played]] = defaultdict(list)
    for p in played:
        by_kind[p.kind].append(p)
    lines += [
        "",
        "| kind of line | lines | answered | replies | replies with a problem |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {kind} | {len(ps)} | {sum(1 for p in ps if p.replies)} | {sum(len(p.replies) for p in ps)} | "
            f"{sum(1 for p in ps for r in p.replies if r.problems)} |"
            for kind, ps in sorted(by_kind.items())
        ),
    ]
    return "\n".join(lines), figures


def report_problems(results: dict[str, list[Played]]) -> None:
    for channel, played in results.items():
        for p in played:
            for r in p.replies:
                if r.problems:
                    print(f"  {channel}: {p.text!r} -> [{r.persona}] {r.text!r}: {', '.join(r.problems)}")
            if not p.replies:
                print(f"  {channel}: {p.text!r} unanswered: {p.notices}")
            if p.false_action:
                print(f"  {channel}: {p.text!r} got an approval request")
