"""How well the embedded Gemma proposes actions: precision, recall and exact arguments on the
labelled lines in tests/data/action_lines.jsonl, through the production path (the local provider's
persona model for Nova, addressed, then `check_call`). Prints a table and rewrites the README block.

Run from the repository root: python bench/actions.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from bench.report import machine, rewrite_readme  # noqa: E402
from graph.actions import ActionCall, check_call  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import load_personas  # noqa: E402

LINES = ROOT / "tests" / "data" / "action_lines.jsonl"
NOW = "2026-11-22T09:00:00+00:00"  # the labels' "today" and "tomorrow" are relative to this
FALSE_POSITIVE_TARGET = 0.05


@dataclass(frozen=True)
class Outcome:
    expected: dict[str, Any]
    proposed: ActionCall | None

    @property
    def wanted(self) -> bool:
        return self.expected["action"] != "none"

    @property
    def exact(self) -> bool:
        if self.proposed is None or self.proposed.name != self.expected["action"]:
            return False
        expected = {k: v for k, v in self.expected.items() if k != "action"}
        return _same_args(self.proposed.args, expected)


def _same_args(got: dict[str, Any], expected: dict[str, Any]) -> bool:
    if got.keys() != expected.keys():
        return False
    for key, value in expected.items():
        if key == "at":
            if datetime.fromisoformat(str(got[key]).replace("Z", "+00:00")) != datetime.fromisoformat(value):
                return False
        elif got[key] != value:
            return False
    return True


async def measure(cache_dir: Path) -> tuple[list[Outcome], float]:
    personas = load_personas()
    nova = personas["nova"]
    models = build_models(ProviderConfig(provider="local", local_cache_dir=cache_dir), {})
    system = system_text(nova, ["Sage", "Rex"], "", needs_approval=nova.actions)
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    for raw in LINES.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        messages: list[BaseMessage] = [
            SystemMessage(content=system),
            HumanMessage(content=f"{row['author']}: {row['text']}"),
        ]
        model = models.persona_model(nova, ["Sage", "Rex", row["author"]], addressed=True).bind(now=NOW)
        reply = await model.ainvoke(messages)
        proposed = None
        for call in getattr(reply, "tool_calls", []):
            checked = check_call(nova, call["id"], call["name"], call["args"])
            if isinstance(checked, ActionCall):
                proposed = checked
        outcomes.append(Outcome(row["expect"], proposed))
    return outcomes, time.perf_counter() - started


def report(outcomes: list[Outcome], seconds: float, load: float) -> str:
    wanted = [o for o in outcomes if o.wanted]
    chat = [o for o in outcomes if not o.wanted]
    true_positives = [o for o in wanted if o.proposed is not None]
    false_positives = [o for o in chat if o.proposed is not None]
    proposed = len(true_positives) + len(false_positives)
    precision = len(true_positives) / proposed if proposed else 0.0
    recall = len(true_positives) / len(wanted)
    exact = sum(o.exact for o in true_positives) / len(true_positives) if true_positives else 0.0
    fp_rate = len(false_positives) / len(chat)
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
    return "\n".join(
        [
            f"Machine: {machine(load)}. {len(outcomes)} labelled lines ({len(wanted)} requests, {len(chat)} chit-chat), "
            f"embedded Gemma 3 270M, greedy decisions, {seconds:.0f} s.",
            "",
            "| metric | measured | target |",
            "| --- | --- | --- |",
            *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        ]
    )


def main() -> None:
    import os

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        outcomes, seconds = asyncio.run(measure(Path(cache)))
    block = report(outcomes, seconds, load)
    print(block)
    for outcome in outcomes:
        if outcome.wanted != (outcome.proposed is not None) or (outcome.proposed and not outcome.exact):
            shown = outcome.proposed.describe() if outcome.proposed else "nothing"
            print(f"  expected {outcome.expected}, proposed {shown}")
    rewrite_readme(ROOT / "README.md", block, name="actions")


if __name__ == "__main__":
    main()
