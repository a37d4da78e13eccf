"""Timings of the embedded model: GGUF assembly, load, throughput and reply latency.

On a chat-template model (the default) it also times a persona's reply as Roundtable sends it: the
shipped Nova's system prompt and a short history through llama.cpp's chat completions, model time
(prompt evaluation and generation, from llama.cpp's own timings) with the prompt cold and cached.

Run from the repository root: python bench/local_model.py [--model NAME] [--threads N] [--runs N]
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

from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, ensure_gguf  # noqa: E402
from graph.models.llama_text import persona_chat  # noqa: E402
from graph.models.local import LocalLlamaChatModel  # noqa: E402
from graph.prompt import system_text  # noqa: E402
from personas import Persona, load_personas  # noqa: E402

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
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--max-tokens", type=int, default=96, help="a persona reply's cap ([llm.local] max_tokens)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        path, first = timed(ensure_gguf, Path(cache), args.model, None)
        _, cached = timed(ensure_gguf, Path(cache), args.model, None)
        print(f"gguf assemble+verify (first):  {first:7.2f} s  ({path.stat().st_size / 1e6:.0f} MB)")
        print(f"gguf ensure (cached, stamped): {cached * 1000:7.2f} ms")

        chat = LOCAL_MODELS[args.model].chat_template
        model = LocalLlamaChatModel(model_path=str(path), n_threads=args.threads, chat_template=chat)
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

        if chat:
            persona_reply_times(model, args.runs, args.max_tokens)
        persona = asyncio.run(replies(model, args.runs, speaker="Nova", max_tokens=40))
        decisions = asyncio.run(replies(model, args.runs, response_format=DECISION))
        for label, runs in (("persona reply (<=40 tok)", persona), ("moderator JSON decision", decisions)):
            latency = statistics.median(s for s, _ in runs)
            tokens = statistics.median(n for _, n in runs)
            print(f"{label:<24} median {latency:5.2f} s, {tokens:.0f} tokens (max {max(s for s, _ in runs):.2f} s)")


HISTORY = [
    HumanMessage(content="Ana: Morning all. We launch the budgeting app in three weeks."),
    HumanMessage(content="[Sage] Then we should decide what the first screen says."),
    HumanMessage(content="Ana: Nova, what price would you put on it, and why?"),
]


def persona_reply_times(model: LocalLlamaChatModel, runs: int, max_tokens: int) -> None:
    """Model time of Nova's reply as Roundtable sends it, cold (no cached prompt) and cached."""
    personas = load_personas()
    nova = personas["nova"]
    system = system_text(nova, ["Sage", "Rex", "Ana"], "")
    prompt, turns = persona_chat([SystemMessage(content=system), *HISTORY], "Nova")
    messages = [{"role": "system", "content": prompt}, *({"role": r, "content": t} for r, t in turns)]
    for label, cache_prompt in (("cold prompt", False), ("cached prompt", True)):
        seconds, generated, prompt_tokens = [], [], 0
        for _ in range(runs):
            request = {"messages": messages, "max_tokens": max_tokens, "stop": ["\n"], "cache_prompt": cache_prompt}
            timings = model._server().handle_chat_completions(request)["timings"]
            seconds.append((timings["prompt_ms"] + timings["predicted_ms"]) / 1000)
            generated.append(timings["predicted_n"])
            prompt_tokens = max(prompt_tokens, timings["prompt_n"])
        print(
            f"Nova's reply, {label:<13} model time median {statistics.median(seconds):5.2f} s "
            f"(max {max(seconds):.2f} s), {statistics.median(generated):.0f} tokens, "
            f"prompt {prompt_tokens} tokens evaluated"
        )
    taking_turns(model, personas, max_tokens)


def taking_turns(model: LocalLlamaChatModel, personas: dict[str, Persona], max_tokens: int) -> None:
    """Model time of each persona's turn in a channel where Nova, Sage and Rex take turns twice:
    whether a persona's prompt is still cached (llama.cpp's host-RAM prompt cache) after the others spoke."""
    history = list(HISTORY)
    names = {"nova": "Nova", "sage": "Sage", "rex": "Rex"}
    for lap in (1, 2):
        for persona_id, name in names.items():
            others = [n for n in (*names.values(), "Ana") if n != name]
            system = system_text(personas[persona_id], others, "")
            prompt, turns = persona_chat([SystemMessage(content=system), *history], name)
            messages = [{"role": "system", "content": prompt}, *({"role": r, "content": t} for r, t in turns)]
            request = {"messages": messages, "max_tokens": max_tokens, "stop": ["\n"], "cache_prompt": True}
            answer = model._server().handle_chat_completions(request)
            timings = answer["timings"]
            text = str(answer["choices"][0]["message"]["content"]).strip() or "(nothing)"
            history.append(HumanMessage(content=f"[{name}] {text}"))
            print(
                f"turn {lap}, {name:<4}  model time {(timings['prompt_ms'] + timings['predicted_ms']) / 1000:5.2f} s, "
                f"prompt {timings['prompt_n']} tokens evaluated of {timings['prompt_n'] + timings.get('cache_n', 0)}"
            )


if __name__ == "__main__":
    main()
