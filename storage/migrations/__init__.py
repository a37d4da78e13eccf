"""Versioned schema migrations, one list for both engines: one SQL file a step, `NNN_what.sql`,
applied in the order of their numbers. Add a new step as the next file; never edit a shipped one.

Each step is written once; the few words the engines spell differently are placeholders that
`storage.dialects.migration_sql` fills in. A file opens with `--` lines that say what the step is
for; they are documentation, left out of the SQL that runs.
"""

from __future__ import annotations

from importlib import resources


def _steps() -> tuple[str, ...]:
    files = sorted((f for f in resources.files(__package__).iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    numbers = [int(f.name.split("_", 1)[0]) for f in files]
    if numbers != list(range(1, len(files) + 1)):
        raise RuntimeError(f"storage/migrations: steps must be numbered 1..{len(files)} with no gap, got {numbers}")
    return tuple(_without_heading(f.read_text(encoding="utf-8")) for f in files)


def _without_heading(text: str) -> str:
    lines = text.splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip("\n") + "\n"


MIGRATIONS: tuple[str, ...] = _steps()
