"""What bench/quality.py found: each played line with its replies, what bench/scorers/quality.py says of
each (the benchmark's own checks, not the product's review), and the tables it prints and writes, the
labelled parts side by side, each figure the median and spread of the runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.lines import Part
from bench.parts import heading, share, side_by_side, spread, verdict
from bench.scorers import quality
from bench.scorers.quality import CHECKS, NEW_CHECKS, LineScore, machinery_notice, new_check_problems, score_line

HUMAN = "Ana"  # who says every labelled line


@dataclass
class Reply:
    persona: str  # id
    speaker: str  # display name
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
    addressed: list[str]  # ids, as labelled
    replies: list[Reply]
    approvals: int
    notices: list[str]
    score: LineScore | None = None
    turns: int = 0  # persona turns the line took (graph.observe.TURNS: spoke, skipped and passed)
    passes: int = 0  # of them, passes: a persona that chose to post nothing (TURNS "passed")


Results = dict[str, list[Played]]  # by channel, in order


def score_played(played: Played, names: dict[str, str], examples: dict[str, tuple[str, ...]]) -> None:
    """The scorer's verdict on a played line, and each reply's problems."""
    replies = [
        quality.Reply(r.speaker, r.text, r.answered, r.window, examples.get(r.persona, ()), asker=HUMAN)
        for r in played.replies
    ]
    addressed = [names[i] for i in played.addressed if i in names]
    played.score = score_line(replies, addressed, played.notices, played.approvals, [*names.values(), HUMAN])
    for reply, problems in zip(played.replies, played.score.problems, strict=True):
        reply.problems = problems


def _lines(results: Results) -> list[Played]:
    return [p for lines in results.values() for p in lines]


def _scores(results: Results) -> list[LineScore]:
    return [p.score for p in _lines(results) if p.score is not None]


def judge_table(judged: Judged) -> str:
    def rate(tally: Counter[str], ok: bool) -> str:
        total = sum(tally.values())
        count = tally["ok"] if ok else total - tally["ok"]
        return f"{count}/{total} = {count / max(total, 1):.0%}"

    per_call = sum(judged.seconds) / max(len(judged.seconds), 1)
    verdicts = ", ".join(f"{v} {n}" for v, n in (judged.replies + judged.made_copies).most_common())
    return "\n".join(
        [
            '| the judge (the same model, `[review] judge = "on"`), first run of the dev part | measured |',
            "| --- | --- |",
            f"| rejects a reply the text checks passed | {rate(judged.replies, ok=False)} |",
            f"| agrees with the text checks on an echo or a copy (rejects it) | {rate(judged.made_copies, ok=False)} |",
            f"| answered no verdict | {judged.failed}/{len(judged.seconds)} |",
            f"| time per verdict | {per_call:.2f} s |",
            "",
            f"Verdicts: {verdicts}.",
        ]
    )


def _figures(runs: Sequence[Results]) -> dict[str, list[tuple[int, int]]]:
    """Each figure's (count, of) in every run."""
    figures: dict[str, list[tuple[int, int]]] = {}

    def add(name: str, count: int, of: int) -> None:
        figures.setdefault(name, []).append((count, of))

    for results in runs:
        scores = _scores(results)
        problems = [p for s in scores for p in s.problems]
        counts = Counter(check for p in problems for check in p)
        for check in CHECKS:
            add(check, counts[check], len(problems))
        add("new checks", sum(new_check_problems(p) for p in problems), len(problems))
        lines = _lines(results)
        add("passes", sum(p.passes for p in lines), sum(p.turns for p in lines))
        one_line = [p for p in lines if not p.moderated]
        add("machinery notices", sum(any(map(machinery_notice, p.notices)) for p in one_line), len(one_line))
        add("false action", sum(s.false_action for s in scores), len(scores))
        add("skipped", sum(s.skipped for s in scores), len(scores))
        add("unanswered", sum(s.unanswered for s in scores), len(scores))
        named = [s for s in scores if s.addressed_first is not None]
        add("addressed first", sum(bool(s.addressed_first) for s in named), len(named))
        add("lines ok", sum(s.ok for s in scores), len(scores))
    return figures


def _none(rate: float) -> bool:
    return rate == 0


def _all(rate: float) -> bool:
    return rate == 1


def _few(rate: float) -> bool:
    return rate <= 0.05


ROWS: tuple[tuple[str, str, str, Callable[[float], bool]], ...] = (
    *((check, f"{check} replies", "0", _none) for check in CHECKS),
    ("new checks", f"replies the new checks flag ({', '.join(NEW_CHECKS)}; issue #55)", "0", _none),
    (
        "machinery notices",
        'machinery notices in one-line rounds (unmoderated lines with a notice of "could not answer", '
        '"Round stopped" or "was skipped")',
        "0",
        _none,
    ),
    ("false action", "false actions (a proposal on a line asking for words)", "0", _none),
    ("skipped", "lines with a turn skipped (a [system] notice)", "0", _none),
    ("unanswered", "unanswered human lines", "≤ 5%", _few),
    ("addressed first", "addressed persona answered first", "all", _all),
    ("lines ok", "lines that pass every check", "all", _all),
)


def quality_table(parts: dict[Part, list[Results]], seconds: float, load: float, runs: int, model: str) -> str:
    figures = {part: _figures(rs) for part, rs in parts.items()}
    rows = [
        [label, *(share(figures[p][key]) for p in parts), verdict(target, {p: figures[p][key] for p in parts}, met)]
        for key, label, target, met in ROWS
    ]
    per_reply = {
        p: spread([sum(r.seconds for r in _replies(res)) / max(len(_replies(res)), 1) for res in rs], " s")
        for p, rs in parts.items()
    }
    rows.append(["passes (turns that posted nothing, of all turns)", *(share(figures[p]["passes"]) for p in parts), ""])
    rows.append(["seconds per reply", *per_reply.values(), ""])
    sizes = ", ".join(
        f"{p} {len(_lines(rs[0]))} human lines in {len(rs[0])} new console channels "
        f"({sum(1 for lines in rs[0].values() if lines and lines[0].moderated)} moderated)"
        for p, rs in parts.items()
    )
    kinds = sorted({p.kind for rs in parts.values() for res in rs for p in _lines(res)})
    kind_rows = [[kind, *(share([_kind_ok(res, kind) for res in rs]) for rs in parts.values())] for kind in kinds]
    return "\n".join(
        [
            heading(load, runs, sizes, seconds) + f" Default config, embedded {model}.",
            "",
            *side_by_side(["metric", *parts, "target"], rows),
            "",
            *side_by_side(["kind of line: lines that pass every check", *parts], kind_rows),
        ]
    )


def _replies(results: Results) -> list[Reply]:
    return [r for p in _lines(results) for r in p.replies]


def _kind_ok(results: Results, kind: str) -> tuple[int, int]:
    of_kind = [p.score for p in _lines(results) if p.kind == kind and p.score is not None]
    return sum(s.ok for s in of_kind), len(of_kind)


def comparison_table(
    setups: list[tuple[str, dict[Part, list[Results]]]], seconds: float, load: float, runs: int
) -> str:
    """One row per setup and part: each check's replies, unanswered and addressed-first lines, the lines that
    pass every check, and the wall seconds per reply (moderator decisions and review rewrites included)."""
    labels = (
        "echoes",
        "copies",
        "example copies",
        "template junk",
        "leaks",
        "wrong speakers",
        "cut-offs",
        "wrong addressees",
        "restatements",
        "unsaid lines",
        "role talk",
    )
    assert len(labels) == len(CHECKS), "a column for every check"
    head = ["setup", "part", *labels, "unanswered", "addressed first", "lines ok", "s per reply"]
    rows = []
    for name, parts in setups:
        for part, rs in parts.items():
            figures = _figures(rs)
            keys = (*CHECKS, "unanswered", "addressed first", "lines ok")
            per_reply = [sum(r.seconds for r in _replies(res)) / max(len(_replies(res)), 1) for res in rs]
            rows.append([name, part, *(share(figures[k]) for k in keys), spread(per_reply)])
    first = setups[0][1] if setups else {}
    sizes = ", ".join(
        f"{p} {len(_lines(rs[0]))} human lines in {len(rs[0])} new console channels" for p, rs in first.items()
    )
    return "\n".join(
        [heading(load, runs, sizes + " per setup", seconds) + " Default config.", "", *side_by_side(head, rows)]
    )


def report_problems(results: Results, part: str) -> None:
    for channel, played in results.items():
        for p in played:
            if p.score is not None and not p.score.ok:
                print(f"  {part} {channel}: {p.text!r}: {'; '.join(p.score.failures)}")
                for r in p.replies:
                    print(f"    [{r.speaker}] {r.text!r}")
                for notice in p.notices:
                    print(f"    {notice}")
