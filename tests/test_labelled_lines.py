"""The benchmarks' labelled lines: every set has a development and a held-out part, the held-out one at least
as large, and no rule of the product (its code, prompts and persona files) quotes a phrase from either."""

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.lines import FOLDER, PARTS, labelled

REPO = Path(__file__).resolve().parents[1]
SETS = sorted(path.stem for path in (FOLDER / "dev").glob("*.jsonl"))
PHRASE_WORDS = 5  # five words in a row: longer than a common turn of phrase, shorter than any example
PRODUCT = [*(REPO / "graph").rglob("*.py"), *(REPO / "bot").rglob("*.py"), *(REPO / "storage").rglob("*.py")]
PRODUCT += [*(REPO / "personas").glob("*.toml"), REPO / "config.toml"]
# Phrases a labelled line shares with the product by the language alone, each with why it is no rule
# written from the line.
SHARED_BY_THE_LANGUAGE = {
    "send a direct message to": "send_message's own description, older than the held-out line using it",
}
WORD = re.compile(r"[a-z0-9']+")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def phrases(text: str) -> set[str]:
    words = WORD.findall(text.casefold())
    return {" ".join(words[i : i + PHRASE_WORDS]) for i in range(len(words) - PHRASE_WORDS + 1)}


def test_phrases_are_runs_of_five_whole_words() -> None:
    assert phrases("Nova, what do you think of the new logo?") == {
        "nova what do you think",
        "what do you think of",
        "do you think of the",
        "you think of the new",
        "think of the new logo",
    }
    assert phrases("too short a line") == set()


@pytest.mark.parametrize("name", SETS)
def test_every_set_has_a_held_out_part_at_least_as_large(name: str) -> None:
    dev, held_out = (labelled(name, part) for part in PARTS)
    assert dev and len(held_out) >= len(dev)
    assert not {json.dumps(line, sort_keys=True) for line in dev} & {
        json.dumps(line, sort_keys=True) for line in held_out
    }


def test_no_product_rule_quotes_a_phrase_of_a_labelled_line() -> None:
    labelled_phrases: dict[str, str] = {}
    for name in SETS:
        for part in PARTS:
            for line in labelled(name, part):
                for text in strings(line):
                    for phrase in phrases(text):
                        labelled_phrases.setdefault(phrase, f"{part}/{name}.jsonl")
    quoted = sorted(
        f"{path.relative_to(REPO)}: «{phrase}» from {labelled_phrases[phrase]}"
        for path in PRODUCT
        for phrase in phrases(path.read_text(encoding="utf-8"))
        if phrase in labelled_phrases and phrase not in SHARED_BY_THE_LANGUAGE
    )
    assert quoted == []
