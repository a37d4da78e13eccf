"""The configuration reference (docs/configuration.md), generated from config.toml's keys, defaults and comments.

Regenerate with: .venv/bin/python -m tests.config_reference
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG_PAGE = REPO / "docs" / "configuration.md"
PIPE = "\\|"
BEGIN, END = "<!-- config-reference:begin -->", "<!-- config-reference:end -->"


def reference_table(config_text: str) -> str:
    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    section, comment = "", []
    for line in config_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section, comment = stripped[1:-1], []
        elif stripped.startswith("#"):
            comment.append(stripped.lstrip("# "))
        elif "=" in stripped and section:
            key, value = (part.strip() for part in stripped.split("=", 1))
            meaning = " ".join(comment).replace("|", PIPE)
            default = value.replace("|", PIPE)
            rows.append(f"| `[{section}] {key}` | `{default}` | {meaning} |")
            comment = []
        elif not stripped:
            comment = [] if section else comment
    return "\n".join(rows)


def reference_section(page: str) -> str:
    return page.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def regenerate() -> None:
    page = CONFIG_PAGE.read_text()
    before, rest = page.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    table = reference_table((REPO / "config.toml").read_text())
    CONFIG_PAGE.write_text(f"{before}{BEGIN}\n{table}\n{END}{after}")


if __name__ == "__main__":
    regenerate()
