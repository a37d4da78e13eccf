"""How well the embedded model (the default unless --model) proposes actions: precision, recall and exact arguments on the
labelled action lines (bench/lines/{dev,held_out}/action.jsonl; the development part unless --part), through the
production path (the local provider's persona model for the persona the line addresses (Nova unless the line names
another), then `check_call`), scored by bench/scorers/actions.py. Prints a table, a column per part, and with
--parts dev,held_out (make bench) rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/actions.py [--part held_out] [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import functools
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from bench import proposals  # noqa: E402
from bench.harness import MODELS_DIR  # noqa: E402
from bench.lines import Part  # noqa: E402
from bench.report import stamp  # noqa: E402
from graph.actions import ActionCall, check_call  # noqa: E402
from graph.models.base import Models  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import Persona, load_personas  # noqa: E402

NOW = "2026-11-22T09:00:00+00:00"  # the labels' "today" and "tomorrow" are relative to this
FALSE_POSITIVE_TARGET = 0.05
TEAM = ("nova", "sage", "rex")


async def measure(
    scratch: Path, lines: proposals.Lines, model: str = DEFAULT_LOCAL_MODEL
) -> dict[Part, proposals.PartRun]:
    """Each part's lines through the action step, one model for every part."""
    personas = load_personas()
    models = build_models(ProviderConfig(provider="local", local_model=model, local_cache_dir=MODELS_DIR), {})
    runs: dict[Part, proposals.PartRun] = {}
    for part, rows in lines.items():
        outcomes: list[proposals.Outcome] = []
        started = time.perf_counter()
        for row in rows:
            outcomes.append(await _one_line(models, personas, row))
        runs[part] = proposals.PartRun(outcomes, time.perf_counter() - started)
    return runs


async def _one_line(models: Models, personas: dict[str, Persona], row: dict[str, Any]) -> proposals.Outcome:
    """The persona the line addresses, with Nova, Sage and Rex present, takes its action step; every
    call `check_call` accepts is a proposal the person would be shown."""
    persona = personas[row.get("persona", "nova")]
    team = [personas[i].display_name for i in TEAM if i != persona.id]
    system = system_text(persona, team, "", needs_approval=persona.actions)
    messages: list[BaseMessage] = [
        SystemMessage(content=system),
        HumanMessage(content=f"{row['author']}: {row['text']}"),
    ]
    reply = await models.persona_model(persona, [*team, row["author"]], addressed=True).bind(now=NOW).ainvoke(messages)
    checked = [check_call(persona, c["id"], c["name"], c["args"]) for c in getattr(reply, "tool_calls", [])]
    return proposals.Outcome(row["text"], row["expect"], tuple(c for c in checked if isinstance(c, ActionCall)))


def report(runs: dict[Part, proposals.PartRun], load: float, model: str = DEFAULT_LOCAL_MODEL, every: int = 1) -> str:
    rows = {part: _figures(run) for part, run in runs.items()}
    targets = {
        "chit-chat lines that got a proposal": f"≤ {FALSE_POSITIVE_TARGET:.0%}",
        "confidence stated (of all proposals)": "every proposal (the schema asks)",
    }
    sizes = "; ".join(
        f"{part}: {len(run.outcomes)} lines ({sum(o.wanted for o in run.outcomes)} requests, "
        f"{sum(not o.wanted for o in run.outcomes)} chit-chat), {run.seconds:.0f} s"
        for part, run in runs.items()
    )
    subset = f", every {every}th line of each part" if every > 1 else ""
    return "\n".join(
        [
            f"{stamp(load, 1)} Embedded {LOCAL_MODELS[model].title}, greedy decisions{subset}. {sizes}.",
            "",
            proposals.side_by_side(rows, targets),
            "",
            *(f"{part}: {proposals.by_action(run.outcomes)}" for part, run in runs.items()),
            "",
            *(
                f"{part}: stated confidence, proposals asked for: {_spread(run.outcomes, asked=True)}; "
                f"proposals on chit-chat: {_spread(run.outcomes, asked=False)}."
                for part, run in runs.items()
            ),
        ]
    )


def _figures(run: proposals.PartRun) -> dict[str, str]:
    """The shared rows, and how many proposals stated a confidence (the action schema asks for one)."""
    rows = proposals.figures(run)
    made = [call for o in run.outcomes for call in o.proposed]
    rows["confidence stated (of all proposals)"] = f"{sum(c.confidence is not None for c in made)}/{len(made)}"
    return rows


def _spread(outcomes: list[proposals.Outcome], asked: bool) -> str:
    """How often each confidence was stated, e.g. "0.9 ×20, 0.8 ×4", on the requests' proposals of the
    asked action (`asked`) or on chit-chat's proposals; "none" for no proposals."""
    counts = Counter(
        call.confidence
        for o in outcomes
        if o.wanted == asked
        for call in o.proposed
        if not asked or call.name == o.expected["action"]
    )
    if not counts:
        return "none"
    return ", ".join(f"{'not stated' if value is None else f'{value:g}'} ×{n}" for value, n in counts.most_common())


def main() -> None:
    args = proposals.model_option(__doc__ or "")
    measured = functools.partial(measure, model=args.model)
    reported = functools.partial(report, model=args.model, every=args.every)
    proposals.run(measured, reported, name="actions", set_name="action", args=args)


if __name__ == "__main__":
    main()
