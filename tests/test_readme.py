"""The README stays a five-minute read that links into the docs site, and the pages it links to,
the site's nav, the generated configuration reference and the benchmark blocks stay in step."""

import ast
import re
from pathlib import Path

import pytest
import yaml

from bench.report import DOCS, block_page, rewrite_block
from tests.config_reference import CONFIG_PAGE, REPO, reference_section, reference_table

README_MAX_LINES = 300
LINK = re.compile(r"\]\(([^)\s]+)\)")
# Every block a script of `make bench` rewrites in docs/ ("engine" is rewrite_block's default).
BENCH_BLOCKS = {
    "engine",
    "first-turn",
    "quality",
    "quality-transcript",
    "models-quality",
    "moderator",
    "actions",
    "mcp_tools",
    "tool_answers",
    "tasks",
    "task-transcript",
    "ops",
    "scale",
    "memory",
}


def nav_pages(nav: list) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = entry if isinstance(entry, str) else next(iter(entry.values()))
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_readme_opens_with_the_two_commands():
    readme = (REPO / "README.md").read_text()
    first_code = readme.split("```")[1]
    assert "make run" in first_code and "make test" in first_code


def test_readme_is_short_and_its_links_stay_in_the_repo():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = [t for t in LINK.findall(readme) if not t.startswith(("http://", "https://", "#"))]
    assert "docs/getting-started.md" in targets
    for target in targets:
        path = (REPO / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(REPO), f"README links outside the repo: {target}"
        assert path.is_file(), f"README links to a missing file: {target}"


def test_every_page_in_the_docs_nav_exists_and_every_page_is_in_it():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = REPO / config["docs_dir"]
    pages = nav_pages(config["nav"])
    assert len(pages) == len(set(pages)), "a page is in the nav twice"
    for page in pages:
        assert (docs / page).is_file(), f"mkdocs.yml's nav names a missing page: {page}"
        assert (docs / page).read_text(encoding="utf-8").startswith("# "), f"{page} does not open with a # Title"
    assert sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")) == sorted(pages)


def test_config_reference_matches_config_toml():
    """Regenerate with `.venv/bin/python -m tests.config_reference` after changing config.toml."""
    expected = reference_table((REPO / "config.toml").read_text())
    assert reference_section(CONFIG_PAGE.read_text()) == expected


def written_block_names() -> set[str]:
    """The block names the bench scripts pass to rewrite_block or to proposals.run (`name=`)."""
    names = set()
    for path in (REPO / "bench").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            given = [k.value for k in node.keywords if k.arg == "name"]
            if called == "rewrite_block" and len(node.args) > 1:
                given.append(node.args[1])
            if called in ("rewrite_block", "run"):
                names.update(g.value for g in given if isinstance(g, ast.Constant) and isinstance(g.value, str))
    return names


def test_every_block_the_benchmarks_write_is_on_one_docs_page(tmp_path: Path):
    assert written_block_names() <= BENCH_BLOCKS
    for name in BENCH_BLOCKS:
        holder = block_page(name)
        assert holder.parent == DOCS
        original = holder.read_text(encoding="utf-8")
        start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
        assert original.count(start) == 1 and original.count(end) == 1, f"{holder.name}: no {name} block"
        page = tmp_path / holder.name
        page.write_text(original, encoding="utf-8")
        rewrite_block(f"the {name} table", name=name, page=page)
        rewritten = page.read_text(encoding="utf-8")
        assert f"{start}\nthe {name} table\n{end}" in rewritten
        before, after = original.split(start, 1)[0], original.split(end, 1)[1]
        assert rewritten.startswith(before) and rewritten.endswith(after)


def test_a_block_on_no_page_or_on_two_pages_is_refused_before_anything_is_written(tmp_path: Path):
    (tmp_path / "a.md").write_text("# A\n\n<!-- bench:x:start -->\nold\n<!-- bench:x:end -->\n", encoding="utf-8")
    assert block_page("x", tmp_path) == tmp_path / "a.md"
    with pytest.raises(RuntimeError, match="0 pages"):
        block_page("y", tmp_path)
    (tmp_path / "b.md").write_text("# B\n\n<!-- bench:x:start -->\nold\n<!-- bench:x:end -->\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="2 pages"):
        block_page("x", tmp_path)
    assert "old" in (tmp_path / "a.md").read_text(encoding="utf-8")
