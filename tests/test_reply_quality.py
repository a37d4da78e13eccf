"""Replies worth reading: the review keeps echoes, copies and cut-off sentences out of the channel,
a task step answered with a copy fails, personas' examples reach both prompt shapes, and a line
after a long silence opens a new session that every persona present is told about once."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from bot.inbound import Inbound
from graph.models.base import ChatRunnable
from graph.models.scripted import ScriptedModels
from graph.step_results import copied_result
from graph.tasks import Plan, Step
from personas import Persona
from storage import tasks
from tests.conftest import EMBEDDED_GEMMA, run_bot, run_console, write_config
from tests.fake_models import CallbackChatModel, FakeModels
from tests.recording_port import RecordingPort

KEY = "console:quality"


def newest_human_text(messages: list[BaseMessage]) -> str:
    line = next(str(m.content) for m in reversed(messages) if str(m.content).startswith("Ana: "))
    return line.removeprefix("Ana: ")


async def say(app, text: str, key: str = KEY) -> None:
    await app.service.handle(Inbound(key, "u1", "Ana", text))
    await app.service.wait_idle()


async def test_an_echo_is_written_again_with_the_reason_then_skipped_never_posted(open_test_app, port):
    async def echo(speaker: str, messages: list[BaseMessage]) -> str:
        return newest_human_text(messages)

    models = FakeModels(echo)
    async with open_test_app(models=models) as app:
        await say(app, "Nova, what should we name our new coffee shop?")
    assert models.count("nova") == 3  # the draft, then two more with the reason
    retry = str(models.calls[1][1][-1].content)
    assert "Your last draft was not posted: the reply repeated the message it answers" in retry
    assert port.posts == []
    assert port.notices() == ["[system] Nova has no answer to that right now."]


async def test_a_copy_of_another_personas_line_is_never_posted_and_a_fresh_draft_is(open_test_app, port):
    drafts = {
        "nova": iter(["Call it Morning Tide: warm light, strong coffee."]),
        "sage": iter(["Call it Morning Tide: warm light, strong coffee.", "Ask first who it is for; then name it."]),
    }

    async def reply(speaker: str, messages: list[BaseMessage]) -> str:
        return next(drafts[speaker])

    models = FakeModels(reply)
    async with open_test_app(models=models) as app:
        await say(app, "Nova and Sage, a name for the coffee shop?")
    assert [(who, text) for _, who, text, _ in port.posts] == [
        ("nova", "Call it Morning Tide: warm light, strong coffee."),
        ("sage", "Ask first who it is for; then name it."),
    ]
    assert "repeated a line already said" in str(models.calls[2][1][-1].content)


async def test_a_reply_cut_by_the_token_limit_ends_at_its_last_full_sentence(open_test_app, port):
    async def long_reply(speaker: str, messages: list[BaseMessage]) -> AIMessage:
        text = "Open at seven. Close at three on Sundays! Then we could also think about the"
        return AIMessage(content=text, response_metadata={"finish_reason": "length"})

    async with open_test_app(models=FakeModels(long_reply)) as app:
        await say(app, "Rex, opening hours?")
    assert port.posts[0][1:3] == ("rex", "Open at seven. Close at three on Sundays!")


def test_a_step_result_that_repeats_the_request_its_step_or_another_result_is_a_copy() -> None:
    plan = Plan(
        title="Offsite",
        steps=[
            Step(id=1, title="Find venues", instruction="Find three venues", capability="research", depends_on=[]),
            Step(id=2, title="Write the invite", instruction="Write the invitation", capability="writing"),
        ],
    )
    done = plan.model_copy(
        update={
            "steps": [
                plan.steps[0].model_copy(
                    update={"status": "completed", "result_summary": "The lakeside hall, the barn and the old mill."}
                ),
                plan.steps[1],
            ]
        }
    )
    request = "Plan a team offsite by the lake"
    assert copied_result("Plan a team offsite by the lake.", request, done, 2) == "it repeated the task's request"
    assert copied_result("Write the invitation!", request, done, 2) == "it repeated its own step"
    assert copied_result("The lakeside hall, the barn and the old mill.", request, done, 2) == (
        "it copied step 1's result"
    )
    assert copied_result("Join us at the lakeside hall on May 3: boats, food, no laptops.", request, done, 2) is None


class SameAnswer(ScriptedModels):
    """The scripted planner, and every persona answering its step with the same words."""

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        async def same(speaker: str, messages: list[BaseMessage]) -> str:
            return "The lakeside hall has forty seats and a terrace by the water."

        return CallbackChatModel(speaker=persona.id, reply=same)


async def test_a_step_answered_with_a_copy_of_an_earlier_result_fails(open_test_app, port: RecordingPort) -> None:
    key = "console:general"
    async with open_test_app(models=SameAnswer()) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite"))
        await app.service.wait_idle()
        task = await tasks.latest(app.db, key)
    plan = port.plans["plan-1"].splitlines()
    assert plan[1] == "[x] 1. Research venues — Sage: The lakeside hall has forty seats and a terrace by the water."
    assert plan[2].startswith("[!] 2. write the invite — Nova")
    assert [who for _, who, _, _ in port.posts][:1] == ["sage"]
    assert "The lakeside hall" not in "".join(text for _, who, text, _ in port.posts if who == "nova")  # no copy posted
    # One failed step of two is not more than half (the rule when the planner names no kind): the task
    # ends, and says what failed.
    assert task is not None and task.status == "completed" and "1 of 2 steps completed, 1 failed" in task.note


# -- persona examples in both prompt shapes ---------------------------------------------------------

NOVA_EXAMPLE = "Love it! Let's give it a name people want to say out loud, then tell the story in one line."


def test_examples_reach_a_chat_models_system_prompt(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run_console(config, "Nova, hello")
    shown = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", "nova").stdout
    system = shown.split("--- human ---")[0]
    assert "How Nova talks (examples of the voice, not lines of this conversation):" in system
    assert f"Nova: {NOVA_EXAMPLE}" in system
    assert "as the embedded model reads it" not in shown  # a chat model's prompt has one shape


def test_examples_open_the_base_models_transcript(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"llm": {"provider": "local"}, "llm.local": EMBEDDED_GEMMA})
    shown = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", "nova").stdout
    transcript = shown.split("--- as the embedded model reads it ---\n", 1)[1]
    header, _, lines = transcript.partition(f"\n\nNova: {NOVA_EXAMPLE}\n")
    assert "How Nova talks" not in transcript  # the heading is for chat models: a base model just reads lines
    assert "You are Nova" in header
    assert lines.splitlines()[-1] == "Nova:"  # then the conversation, and Nova's turn to continue it
    assert lines.splitlines()[0].startswith("Nova: Big bet:")


# -- session markers ---------------------------------------------------------------------------------


def age_lines(app, hours: float) -> None:
    with sqlite3.connect(app.config.data_dir / "roundtable.sqlite3") as db:
        db.execute("UPDATE lines SET created_at = created_at - ?", (hours * 3600,))


async def test_a_line_after_the_gap_opens_a_new_session_told_once_to_each_persona_present(open_test_app, port):
    async with open_test_app({"history": {"session_gap_hours": 6}}) as app:
        await say(app, "Morning! Plans for the launch?")
        age_lines(app, 5)
        await say(app, "Still there?")  # five hours: the same session
        age_lines(app, 7)
        await say(app, "Back after the weekend: where were we?")
        await say(app, "And the launch date?")  # right after: no new marker
        prompts = {p: await app.engine.prompt_for(KEY, p) for p in ("nova", "sage", "rex")}
        await app.service.handle(Inbound(KEY, "u1", "Ana", "/invite pixel"))
        pixel = await app.engine.prompt_for(KEY, "pixel")
    for persona, messages in prompts.items():
        texts = [str(m.content) for m in messages]
        markers = [t for t in texts if t.startswith("[system] New session (")]
        assert len(markers) == 1, persona
        assert texts[texts.index(markers[0]) + 1] == "Ana: Back after the weekend: where were we?"
        assert markers[0].endswith(" UTC)")
    assert not any("New session" in str(m.content) for m in pixel)  # not present then


def test_roundtable_prompt_shows_the_session_marker(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run_console(config, "Hello Sage")
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        db.execute("UPDATE lines SET created_at = created_at - 7 * 3600")
    run_console(config, "Hello again, Sage")
    shown = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", "sage").stdout
    marker = shown.index("--- human ---\n[system] New session (")
    assert marker < shown.index("--- human ---\nyou: Hello again, Sage") and shown.index("you: Hello Sage") < marker
