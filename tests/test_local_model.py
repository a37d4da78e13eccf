"""The embedded llama.cpp model with the real Gemma 3 270M GGUF (cached in ~/.cache/roundtable-test)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from graph.models import gguf
from graph.models.gguf import ensure_gguf
from graph.models.local import LocalLlamaChatModel, bounded_schema, render_prompt

CACHE_DIR = Path.home() / ".cache" / "roundtable-test"

DECISION_SCHEMA = {
    "type": "object",
    "properties": {
        "next_speaker": {"type": "string", "enum": ["Nova", "Sage", "FINISH"]},
        "reason": {"type": "string"},
    },
    "required": ["next_speaker", "reason"],
}

CHAT = [
    SystemMessage(content="A friendly group chat about travel. Nova is cheerful and curious. Sage is calm and wise."),
    HumanMessage(content="Ana: hello everyone, where should I go this summer?"),
    HumanMessage(content="[Sage] Somewhere quiet, perhaps the mountains."),
]


@pytest.fixture(scope="session")
def model() -> LocalLlamaChatModel:
    path = ensure_gguf(CACHE_DIR)
    llm = LocalLlamaChatModel(model_path=str(path), max_tokens=24, seed=7)
    llm.load()
    return llm


def test_transcript_rendering() -> None:
    messages = [
        SystemMessage(content="Scene notes."),
        HumanMessage(content="Ana: hi\nthere"),
        HumanMessage(content="[Sage] hello"),
        HumanMessage(content="[system] Sage joined"),
        AIMessage(content="hey all"),
    ]
    assert render_prompt(messages, speaker="Nova") == (
        "Scene notes.\n\nAna: hi there\nSage: hello\n[system] Sage joined\nNova: hey all\nNova:"
    )
    assert render_prompt(messages).endswith("\nAssistant: hey all\nDecision (JSON):")


def test_bounded_schema_caps_free_text_only() -> None:
    bounded = bounded_schema(DECISION_SCHEMA)
    props = bounded["properties"]
    assert props["next_speaker"] == DECISION_SCHEMA["properties"]["next_speaker"]
    assert props["reason"]["maxLength"] == 100 and "pattern" in props["reason"]
    assert bounded["additionalProperties"] is False
    assert "maxLength" not in DECISION_SCHEMA["properties"]["reason"]  # the caller's schema is untouched


def test_ensure_gguf_reassembles_a_corrupt_file_and_skips_a_verified_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b"tiny stand-in for the model"
    calls: list[Path] = []

    def fake_assemble(output_path: Path, overwrite: bool = False) -> Path:
        calls.append(Path(output_path))
        Path(output_path).write_bytes(payload)
        return Path(output_path)

    monkeypatch.setattr(gguf.gemma, "assemble", fake_assemble)
    monkeypatch.setattr(gguf.gemma, "EXPECTED_SHA256", hashlib.sha256(payload).hexdigest())
    target = tmp_path / gguf.gemma.MODEL_NAME
    target.write_bytes(b"corrupt")

    assert ensure_gguf(tmp_path) == target and target.read_bytes() == payload and len(calls) == 1
    monkeypatch.setattr(gguf, "_sha256", lambda path: pytest.fail("a stamped file must not be re-hashed"))
    assert ensure_gguf(tmp_path) == target and len(calls) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name, target.name + ".sha256"]


async def test_persona_reply_is_one_line_and_stops_before_another_speaker(model: LocalLlamaChatModel) -> None:
    reply = await model.bind(speaker="Nova", stop=["\nSage:", "\nAna:", "Sage:"]).ainvoke(CHAT)
    assert isinstance(reply.content, str) and reply.content
    assert "\n" not in reply.content
    assert "Sage:" not in reply.content


async def test_moderator_decision_is_schema_constrained_json(model: LocalLlamaChatModel) -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "decision", "schema": DECISION_SCHEMA}}
    moderator = model.bind(response_format=response_format, temperature=1.0)
    for _ in range(2):
        decision = json.loads((await moderator.ainvoke(CHAT)).content)
        assert isinstance(decision, dict)
        assert decision["next_speaker"] in {"Nova", "Sage", "FINISH"}
        assert isinstance(decision["reason"], str)


async def test_generation_does_not_block_the_event_loop(model: LocalLlamaChatModel) -> None:
    # A fresh, longish scene (no prompt-cache hit) so the call lasts long enough to observe.
    scene = " ".join(f"Memory {i}: Nova once visited town number {i} and liked its bakery." for i in range(30))
    messages = [SystemMessage(content=f"{time.time()} {scene}"), *CHAT[1:]]
    gaps: list[float] = []
    generating = asyncio.create_task(model.bind(speaker="Nova", max_tokens=48).ainvoke(messages))
    started = last = time.perf_counter()
    while not generating.done():
        await asyncio.sleep(0.01)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    duration = time.perf_counter() - started
    await generating
    assert duration > 0.3, f"generation took only {duration:.3f}s, too short to tell"
    assert max(gaps) < duration / 2


async def test_another_channels_round_completes_while_a_local_generation_runs(model, open_test_app, port) -> None:
    """Nova speaks through the embedded model, Sage through a fake: Sage's channel must not wait for Nova's."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from bot.inbound import Inbound

    generating = asyncio.Event()
    slow = model.bind(speaker="Nova", stop=["\n"], max_tokens=48)

    class Mixed:
        description = "local for Nova, fake for Sage"

        def persona_model(self, persona, other_names, *, addressed=False):
            if persona.id == "nova":
                generating.set()
                return slow
            return GenericFakeChatModel(messages=iter(["Sage answers at once, without waiting."]))

        def moderator_model(self, choices):
            raise AssertionError("moderation is off")

    async with open_test_app({"review": {"min_chars": 0}}, models=Mixed()) as app:
        await app.service.handle(Inbound("console:a", "u1", "Ana", "Nova, tell me a long story about the sea."))
        await asyncio.wait_for(generating.wait(), 30)
        await app.service.handle(Inbound("console:b", "u1", "Ana", "Sage, quick question?"))
        await app.service.wait_idle("console:b")
        assert port.speakers() == ["sage"]  # channel b answered while Nova's generation was still running
        await app.service.wait_idle()
    assert port.speakers() == ["sage", "nova"]
