"""Dependencies point one way: bot -> graph -> storage; personas are data; no platform types below bot/."""

import ast
from pathlib import Path

from tests.conftest import REPO

ALLOWED = {
    "storage": set(),
    "personas": set(),
    "graph": {"storage", "personas"},
    "bot": {"graph", "storage", "personas"},
}
OURS = set(ALLOWED)
PLATFORMS = {"slack_bolt", "slack_sdk", "discord"}


def imported_top_levels(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_each_layer_imports_only_the_layers_below_it():
    for layer, allowed in ALLOWED.items():
        for path in (REPO / layer).rglob("*.py"):
            ours = imported_top_levels(path) & OURS - {layer}
            assert ours <= allowed, f"{path.relative_to(REPO)} imports {sorted(ours - allowed)}"


def test_no_platform_type_enters_graph_or_storage():
    for layer in ("graph", "storage", "personas"):
        for path in (REPO / layer).rglob("*.py"):
            assert not imported_top_levels(path) & PLATFORMS, f"{path.relative_to(REPO)} imports a platform SDK"
