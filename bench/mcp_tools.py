"""How well the embedded model (the default unless --model) proposes calls of MCP tools: precision, recall and exact arguments on
the labelled lines in bench/lines/dev/mcp_tool.jsonl (requests for the test notes server's tools,
and chit-chat about notes), through the production path: the real server (tests/mcp_notes_server.py
over stdio) lists its tools, Rex may use them (tools = ["notes"]), the local provider's persona model
takes its action step under their input schemas, and `check_call` checks what it proposes. Prints a
table and rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/mcp_tools.py [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from bench import proposals  # noqa: E402
from bench.harness import MODELS_DIR  # noqa: E402
from bench.report import machine  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.mcp_servers import McpServers  # noqa: E402
from graph.actions import ActionCall, check_call  # noqa: E402
from graph.models.chat import ChatModels  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import load_personas  # noqa: E402

LINES = ROOT / "bench" / "lines" / "dev" / "mcp_tool.jsonl"
SERVER = ROOT / "tests" / "mcp_notes_server.py"


async def measure(
    work: Path, model: str = DEFAULT_LOCAL_MODEL, every: int = 1
) -> tuple[list[proposals.Outcome], float]:
    config_path = work / "config.toml"
    config_path.write_text(
        f'[storage]\ndata_dir = "{work / "data"}"\n'
        f'[mcp.servers.notes]\ncommand = ["{sys.executable}", "{SERVER}", "stdio"]\nread_only = ["read_note"]\n',
        encoding="utf-8",
    )
    config = load_config(config_path)
    catalog = McpServers.catalog_for(config)
    servers = McpServers(config, catalog)
    await servers.start(wait_seconds=60)
    try:
        personas = load_personas()
        rex = personas["rex"].model_copy(update={"tools": ("notes",)})
        team = [personas[i].display_name for i in ("nova", "sage")]
        models = build_models(ProviderConfig(provider="local", local_model=model, local_cache_dir=MODELS_DIR), {})
        assert isinstance(models, ChatModels)
        models.use_tools(catalog)
        outcomes: list[proposals.Outcome] = []
        started = time.perf_counter()
        for raw in LINES.read_text(encoding="utf-8").splitlines()[::every]:
            row = json.loads(raw)
            messages: list[BaseMessage] = [
                SystemMessage(content=system_text(rex, team, "", needs_approval=rex.actions)),
                HumanMessage(content=f"{row['author']}: {row['text']}"),
            ]
            reply = await models.persona_model(rex, [*team, row["author"]], addressed=True).ainvoke(messages)
            proposed = None
            for call in getattr(reply, "tool_calls", []):
                checked = check_call(rex, call["id"], call["name"], call["args"], catalog)
                if isinstance(checked, ActionCall) and checked.name.startswith("notes."):
                    proposed = checked
            outcomes.append(proposals.Outcome(row["text"], row["expect"], proposed))
        return outcomes, time.perf_counter() - started
    finally:
        await servers.stop()


def report(outcomes: list[proposals.Outcome], seconds: float, load: float, model: str = DEFAULT_LOCAL_MODEL) -> str:
    wanted = [o for o in outcomes if o.wanted]
    chat = [o for o in outcomes if not o.wanted]
    hits = [o for o in wanted if o.proposed is not None]
    false_positives = [o for o in chat if o.proposed is not None]
    proposed = len(hits) + len(false_positives)
    exact = sum(o.exact for o in hits)
    rows = [
        (
            "precision (proposals that were asked for)",
            f"{len(hits)}/{proposed}" + (f" = {len(hits) / proposed:.0%}" if proposed else ""),
        ),
        (
            "recall (requests that became a proposal)",
            f"{len(hits)}/{len(wanted)}" + (f" = {len(hits) / len(wanted):.0%}" if wanted else ""),
        ),
        ("false positives on chit-chat", f"{len(false_positives)}/{len(chat)}"),
        (
            "exact arguments (of the proposals asked for)",
            f"{exact}/{len(hits)}" + (f" = {exact / len(hits):.0%}" if hits else ""),
        ),
        ("time per line (action step, and a reply when none)", f"{seconds / len(outcomes):.2f} s"),
    ]
    return "\n".join(
        [
            f"Machine: {machine(load)}. {len(outcomes)} labelled lines ({len(wanted)} requests for the notes "
            f"server's read_note and write_note, {len(chat)} chit-chat about notes), embedded {LOCAL_MODELS[model].title}, "
            f"greedy decisions, {seconds:.0f} s.",
            "",
            "| metric | measured |",
            "| --- | --- |",
            *(f"| {a} | {b} |" for a, b in rows),
            "",
            proposals.by_action(outcomes, "By tool"),
        ]
    )


def main() -> None:
    args = proposals.model_option(__doc__ or "")
    measured = functools.partial(measure, model=args.model, every=args.every)
    proposals.run(measured, functools.partial(report, model=args.model), name="mcp_tools", docs=not args.no_docs)


if __name__ == "__main__":
    main()
