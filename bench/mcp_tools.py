"""How well the embedded model (the default unless --model) proposes calls of MCP tools: precision, recall and exact arguments on
the labelled MCP lines (bench/lines/{dev,held_out}/mcp_tool.jsonl, the development part unless --part: requests for
the test notes server's tools, and chit-chat about notes), through the production path: the real server
(tests/mcp_notes_server.py over stdio) lists its tools, Rex may use them (tools = ["notes"]), the local provider's
persona model takes its action step under their input schemas, and `check_call` checks what it proposes; scored by
bench/scorers/actions.py (the lines have the actions' shape). Prints a table, a column per part, and with
--parts dev,held_out (make bench) rewrites its block of docs/benchmarks.md.

Run from the repository root: python bench/mcp_tools.py [--part held_out] [--model gemma-3-270m] [--no-docs]
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from bench import proposals  # noqa: E402
from bench.harness import MODELS_DIR  # noqa: E402
from bench.lines import Part  # noqa: E402
from bench.report import stamp  # noqa: E402
from bot.config import load_config  # noqa: E402
from bot.mcp_servers import McpServers  # noqa: E402
from graph.actions import ActionCall, check_call  # noqa: E402
from graph.models.chat import ChatModels  # noqa: E402
from graph.models.factory import ProviderConfig, build_models  # noqa: E402
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import load_personas  # noqa: E402

SERVER = ROOT / "tests" / "mcp_notes_server.py"


async def measure(
    work: Path, lines: proposals.Lines, model: str = DEFAULT_LOCAL_MODEL
) -> dict[Part, proposals.PartRun]:
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
        runs: dict[Part, proposals.PartRun] = {}
        for part, rows in lines.items():
            outcomes: list[proposals.Outcome] = []
            started = time.perf_counter()
            for row in rows:
                messages: list[BaseMessage] = [
                    SystemMessage(content=system_text(rex, team, "", needs_approval=rex.actions)),
                    HumanMessage(content=f"{row['author']}: {row['text']}"),
                ]
                reply = await models.persona_model(rex, [*team, row["author"]], addressed=True).ainvoke(messages)
                checked = [
                    check_call(rex, call["id"], call["name"], call["args"], catalog)
                    for call in getattr(reply, "tool_calls", [])
                ]
                # Every accepted call counts, a built-in action too: a note_to for a note request is a wrong call.
                proposed = tuple(c for c in checked if isinstance(c, ActionCall))
                outcomes.append(proposals.Outcome(row["text"], row["expect"], proposed))
            runs[part] = proposals.PartRun(outcomes, time.perf_counter() - started)
        return runs
    finally:
        await servers.stop()


def report(runs: dict[Part, proposals.PartRun], load: float, model: str = DEFAULT_LOCAL_MODEL, every: int = 1) -> str:
    sizes = "; ".join(
        f"{part}: {len(run.outcomes)} lines ({sum(o.wanted for o in run.outcomes)} requests for the notes server's "
        f"tools, {sum(not o.wanted for o in run.outcomes)} chit-chat about notes), {run.seconds:.0f} s"
        for part, run in runs.items()
    )
    subset = f", every {every}th line of each part" if every > 1 else ""
    return "\n".join(
        [
            f"{stamp(load, 1)} Embedded {LOCAL_MODELS[model].title}, greedy decisions{subset}. {sizes}.",
            "",
            proposals.side_by_side({part: proposals.figures(run) for part, run in runs.items()}),
            "",
            *(f"{part}: {proposals.by_action(run.outcomes, 'by tool')}" for part, run in runs.items()),
        ]
    )


def main() -> None:
    args = proposals.model_option(__doc__ or "")
    measured = functools.partial(measure, model=args.model)
    reported = functools.partial(report, model=args.model, every=args.every)
    proposals.run(measured, reported, name="mcp_tools", set_name="mcp_tool", args=args)


if __name__ == "__main__":
    main()
