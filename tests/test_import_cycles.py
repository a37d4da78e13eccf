"""The project's modules import one another without a cycle, and none passes 400 lines.

The graph counts every import in bot/, graph/, storage/ and personas/: module-level ones and the
ones inside functions alike (a deferred import only hides a cycle, it does not break it). Imports
under `if TYPE_CHECKING:` are left out: they never run, so they cannot take part in a cycle at
import time, and they are how a type names a module that sits above it.

One pair of edges is excepted: `storage.database.open_database`, the backend factory, imports the
backend a URL or path asks for (storage.postgres or storage.sqlite) when it is called, and each
backend imports the protocol it implements from storage.database. The import runs at call time, long
after both modules are loaded, and keeps asyncpg out of a process on SQLite.

An import of `package.module` counts as an edge to that module; `from package import name` counts
as an edge to `package.name` when that is a module, else to the package's `__init__`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("bot", "graph", "storage", "personas")
SIZE_CHECKED = ("bot", "graph", "storage")
MAX_LINES = 400
EXCEPTED = {("storage.database", "storage.postgres"), ("storage.database", "storage.sqlite")}  # the backend factory


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for package in PACKAGES for path in sorted((root / package).rglob("*.py"))}


def _is_type_checking_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking_guard(child):
            for orelse in child.orelse:
                yield from _imports_in(orelse)
            continue
        yield from _imports_in(child)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _imports(node)


def _resolve_relative(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(importer: str, path: Path, modules: set[str]) -> set[str]:
    """The project modules `importer` imports (each resolved to the most specific module file)."""
    found: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            source = (
                (node.module or "")
                if node.level == 0
                else _resolve_relative(importer, path.name == "__init__.py", node)
            )
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names
            ]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != importer:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = project_modules(root)
    graph = {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}
    for importer, imported in EXCEPTED:
        graph.get(importer, set()).discard(imported)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None: a depth-first search for an edge back onto its path."""
    finished: set[str] = set()
    for start in sorted(graph):
        if start in finished:
            continue
        path = [start]
        unvisited = [iter(sorted(graph[start]))]
        while path:
            following = next(unvisited[-1], None)
            if following is None:
                finished.add(path.pop())
                unvisited.pop()
            elif following in path:
                return path[path.index(following) :] + [following]
            elif following not in finished:
                path.append(following)
                unvisited.append(iter(sorted(graph[following])))
    return None


def test_the_cycle_finder_names_a_cycle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_function_level_imports_count_and_type_checking_ones_do_not(tmp_path):
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "__init__.py").write_text("")
    (tmp_path / "bot" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot import c\ndef f():\n    from . import b\n"
    )
    (tmp_path / "bot" / "b.py").write_text("import bot.a\n")
    (tmp_path / "bot" / "c.py").write_text("from bot.a import f\n")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    graph = import_graph(tmp_path)
    assert graph["bot.a"] == {"bot.b"}
    assert find_cycle(graph) == ["bot.a", "bot.b", "bot.a"]


def test_no_import_cycle_among_the_project_modules():
    cycle = find_cycle(import_graph(REPO))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_configuration_reaches_no_command_registry_module():
    """bot/config.py sits below the command registry: whoever builds the permissions checks their names."""
    graph = import_graph(REPO)
    reached, todo = set(), ["bot.config"]
    while todo:
        for module in graph.get(todo.pop(), set()) - reached:
            reached.add(module)
            todo.append(module)
    registry = {"bot.commands", "bot.command_values", "bot.command_handlers"}
    assert not reached & registry, f"bot.config reaches {sorted(reached & registry)}"


def test_no_module_passes_400_lines():
    too_long = {
        str(path.relative_to(REPO)): lines
        for package in SIZE_CHECKED
        for path in (REPO / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"modules over {MAX_LINES} lines (split each where it holds two ideas): {too_long}"
