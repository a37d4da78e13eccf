"""The benchmarks' labelled lines: each set in two parts, `dev/NAME.jsonl` and `held_out/NAME.jsonl`.

The development part may be looked at while working on the product; the held-out part is written blind
(by someone who has not read graph/ nor the development part's misses) and is run only by `make bench`.
No rule in the product may quote a phrase from either part. Each line is one JSON object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

FOLDER = Path(__file__).resolve().parent
Part = Literal["dev", "held_out"]
PARTS: tuple[Part, ...] = ("dev", "held_out")


def labelled(name: str, part: Part) -> list[dict[str, Any]]:
    """The lines of set `name` in `part`, in file order; a missing held-out file is an error, not zero lines."""
    path = FOLDER / part / f"{name}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no labelled lines {part}/{name}.jsonl under {FOLDER}")
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]
