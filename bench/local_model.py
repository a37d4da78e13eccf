"""Timings of the embedded model: GGUF assembly, load, throughput and reply latency.

Run from the repository root: python bench/local_model.py [--threads N] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402

from graph.models.gguf import ensure_gguf  # noqa: E402
from graph.models.local import LocalLlamaChatModel  # noqa: E402

CHAT = [
    SystemMessage(content="A friendly group chat about travel. Nova is cheerful and curious. Sage is calm and wise."),
    HumanMessage(content="Ana: hello everyone, where should I go this summer? Somewhere warm, I think."),
    HumanMessage(content="[Sage] Somewhere quiet, perhaps the mountains, where the evenings are long."),
]
P = ParamSpec("P")
R = TypeVar("R")

DECISION = {
    "type": "json_schema",
    "json_schema": {
        "name": "decision",
        "schema": {
            "type": "object",
            "properties": {
                "next_speaker": {"type": "string", "enum": ["Nova", "Sage", "FINISH"]},
                "reason": {"type": "string"},
            },
            "required": ["next_speaker", "reason"],
        },
    },
}


def timed(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> tuple[R, float]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


async def replies(model: LocalLlamaChatModel, runs: int, **bound: object) -> list[tuple[float, int]]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        message = await model.bind(**bound).ainvoke(CHAT)
        out.append((time.perf_counter() - start, message.usage_metadata["output_tokens"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        path, first = timed(ensure_gguf, Path(cache))
        _, cached = timed(ensure_gguf, Path(cache))
        print(f"gguf assemble+verify (first):  {first:7.2f} s  ({path.stat().st_size / 1e6:.0f} MB)")
        print(f"gguf ensure (cached, stamped): {cached * 1000:7.2f} ms")

        model = LocalLlamaChatModel(model_path=str(path), n_threads=args.threads)
        _, load = timed(model.load)
        print(f"model load ({args.threads} threads):        {load:7.2f} s")

        # Raw throughput: a fixed-length completion, no stop strings, straight to llama.cpp.
        prompt = "\n".join(str(m.content) for m in CHAT) + "\nNova:"
        raw = model._server().handle_completions(
            {"prompt": prompt, "max_tokens": 128, "ignore_eos": True, "temperature": 0.8}
        )
        timings = raw["timings"]
        print(
            f"prompt eval:                   {timings['prompt_per_second']:7.1f} tok/s ({timings['prompt_n']} tokens)"
        )
        print(
            f"generation:                    {timings['predicted_per_second']:7.1f} tok/s ({timings['predicted_n']} tokens)"
        )

        forced = model._server().handle_completions(
            {"prompt": prompt, "max_tokens": 40, "ignore_eos": True, "cache_prompt": False}
        )
        forced_s = (forced["timings"]["prompt_ms"] + forced["timings"]["predicted_ms"]) / 1000
        print(f"40-token reply, uncached prompt: {forced_s:5.2f} s")

        persona = asyncio.run(replies(model, args.runs, speaker="Nova", max_tokens=40))
        decisions = asyncio.run(replies(model, args.runs, response_format=DECISION))
        for label, runs in (("persona reply (<=40 tok)", persona), ("moderator JSON decision", decisions)):
            latency = statistics.median(s for s, _ in runs)
            tokens = statistics.median(n for _, n in runs)
            print(f"{label:<24} median {latency:5.2f} s, {tokens:.0f} tokens (max {max(s for s, _ in runs):.2f} s)")


if __name__ == "__main__":
    main()
