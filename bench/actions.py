"""How well the embedded model (the default unless --model) proposes actions: precision, recall and exact arguments on the
labelled lines in bench/lines/dev/action.jsonl, through the production path (the local provider's
persona model for the persona the line addresses (Nova unless the line names another), then `check_call`). Prints a table and rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/actions.py [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from bench import proposals  # noqa: E402
from bench.harness import MODELS_DIR  # noqa: E402
from bench.report import machine  # noqa: E402
from graph.actions import ActionCall, check_call  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import load_personas  # noqa: E402

LINES = ROOT / "bench" / "lines" / "dev" / "action.jsonl"
NOW = "2026-11-22T09:00:00+00:00"  # the labels' "today" and "tomorrow" are relative to this
FALSE_POSITIVE_TARGET = 0.05
TEAM = ("nova", "sage", "rex")


class Outcome(proposals.Outcome):
    def same_args(self, got: dict[str, Any], expected: dict[str, Any]) -> bool:
        """The same arguments; a time ("at") may be written in another offset or with Z."""
        if got.keys() != expected.keys():
            return False
        for key, value in expected.items():
            if key == "at":
                if datetime.fromisoformat(str(got[key]).replace("Z", "+00:00")) != datetime.fromisoformat(value):
                    return False
            elif got[key] != value:
                return False
        return True


async def measure(
    cache_dir: Path, model: str = DEFAULT_LOCAL_MODEL, every: int = 1
) -> tuple[list[proposals.Outcome], float]:
    personas = load_personas()
    models = build_models(ProviderConfig(provider="local", local_model=model, local_cache_dir=MODELS_DIR), {})
    outcomes: list[proposals.Outcome] = []
    started = time.perf_counter()
    for raw in LINES.read_text(encoding="utf-8").splitlines()[::every]:
        row = json.loads(raw)
        persona = personas[row.get("persona", "nova")]  # the line addresses it; Nova, Sage and Rex are present
        team = [personas[i].display_name for i in TEAM if i != persona.id]
        system = system_text(persona, team, "", needs_approval=persona.actions)
        messages: list[BaseMessage] = [
            SystemMessage(content=system),
            HumanMessage(content=f"{row['author']}: {row['text']}"),
        ]
        model = models.persona_model(persona, [*team, row["author"]], addressed=True).bind(now=NOW)
        reply = await model.ainvoke(messages)
        proposed = None
        for call in getattr(reply, "tool_calls", []):
            checked = check_call(persona, call["id"], call["name"], call["args"])
            if isinstance(checked, ActionCall):
                proposed = checked
        outcomes.append(Outcome(row["text"], row["expect"], proposed))
    return outcomes, time.perf_counter() - started


def report(outcomes: list[proposals.Outcome], seconds: float, load: float, model: str = DEFAULT_LOCAL_MODEL) -> str:
    wanted = [o for o in outcomes if o.wanted]
    chat = [o for o in outcomes if not o.wanted]
    true_positives = [o for o in wanted if o.proposed is not None]
    false_positives = [o for o in chat if o.proposed is not None]
    proposed = len(true_positives) + len(false_positives)
    precision = len(true_positives) / proposed if proposed else 0.0
    recall = len(true_positives) / len(wanted) if wanted else 0.0
    exact = sum(o.exact for o in true_positives) / len(true_positives) if true_positives else 0.0
    fp_rate = len(false_positives) / len(chat) if chat else 0.0
    rows = [
        (
            "precision (proposals that were asked for)",
            f"{len(true_positives)}/{proposed} = {precision:.0%}",
            "as high as possible",
        ),
        (
            "recall (requests that became a proposal)",
            f"{len(true_positives)}/{len(wanted)} = {recall:.0%}",
            "as high as possible",
        ),
        (
            "false positives on chit-chat",
            f"{len(false_positives)}/{len(chat)} = {fp_rate:.1%}",
            f"≤ {FALSE_POSITIVE_TARGET:.0%} ({'met' if fp_rate <= FALSE_POSITIVE_TARGET else 'missed'})",
        ),
        (
            "exact arguments (of the proposals asked for)",
            f"{sum(o.exact for o in true_positives)}/{len(true_positives)} = {exact:.0%}",
            "as high as possible",
        ),
        ("time per line (action step, and a reply when none)", f"{seconds / len(outcomes):.2f} s", ""),
    ]
    made = [o.proposed for o in outcomes if o.proposed is not None]
    stated = [call.confidence for call in made if call.confidence is not None]
    rows.insert(
        4,
        ("confidence stated (of all proposals)", f"{len(stated)}/{len(made)}", "every proposal (the schema asks)"),
    )
    return "\n".join(
        [
            f"Machine: {machine(load)}. {len(outcomes)} labelled lines ({len(wanted)} requests, {len(chat)} chit-chat), "
            f"embedded {LOCAL_MODELS[model].title}, greedy decisions, {seconds:.0f} s.",
            "",
            "| metric | measured | target |",
            "| --- | --- | --- |",
            *(f"| {a} | {b} | {c} |" for a, b, c in rows),
            "",
            proposals.by_action(outcomes),
            "",
            f"Stated confidence, proposals asked for: {_spread(true_positives)}; "
            f"proposals on chit-chat: {_spread(false_positives)}.",
        ]
    )


def _spread(outcomes: list[proposals.Outcome]) -> str:
    """How often each confidence was stated, e.g. "0.9 ×20, 0.8 ×4"; "none" for no proposals."""
    counts = Counter(o.proposed.confidence for o in outcomes if o.proposed is not None)
    if not counts:
        return "none"
    return ", ".join(f"{'not stated' if value is None else f'{value:g}'} ×{n}" for value, n in counts.most_common())


def main() -> None:
    args = proposals.model_option(__doc__ or "")
    measured = functools.partial(measure, model=args.model, every=args.every)
    proposals.run(measured, functools.partial(report, model=args.model), name="actions", docs=not args.no_docs)


if __name__ == "__main__":
    main()
