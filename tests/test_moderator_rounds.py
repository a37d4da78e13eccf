"""Moderated rounds honour addressing and end on time; with moderation off a line is answered once."""

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda

from bot.command_values import Moderate
from bot.inbound import Inbound
from graph.models.base import ChatRunnable
from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.moderator import (
    CUT_OFF,
    FINISH_REASONS,
    PICK_REASONS,
    decision_schema,
    fixed_reason_schema,
    moderator_messages,
)
from graph.routing import FALLBACK_PICK, FOLLOW_UP_TURNS
from tests.conftest import REPO, write_config
from tests.fake_models import FakeModels, varied_reply
from tests.test_task_models import PromptsSeen

KEY = "console:m"
REPLY = varied_reply("A reply that is long enough to pass review.")


async def run(app, *lines: str, key: str = KEY) -> None:
    for line in lines:
        await app.service.handle(Inbound(key, "u1", "Ana", line))
    await app.service.wait_idle()


def traces(port) -> list[str]:
    return [text for kind, _, text in port.events if kind == "trace"]


def moderator_prompts(models: FakeModels) -> list[str]:
    return ["\n".join(str(m.content) for m in messages) for speaker, messages in models.calls if speaker == "moderator"]


async def test_addressed_personas_speak_first_in_mention_order_then_the_moderator_continues(open_test_app, port):
    decisions = [
        {"next_speaker": "Sage", "reason": "can answer the last point"},
        {"next_speaker": "FINISH", "reason": "the question has been answered"},
    ]
    models = FakeModels(REPLY, decisions)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "Rex, then Nova: what do you think?")
    assert port.speakers() == ["rex", "nova", "sage"]
    assert traces(port) == [
        "[moderator] next: Rex (Rex was addressed)",
        "[moderator] next: Nova (Nova was addressed)",
        "[moderator] next: Sage (Sage can answer the last point)",
        "[moderator] next: FINISH (the question has been answered)",
    ]
    assert models.count("moderator") == 2  # nobody was asked who the addressed were


async def test_the_moderator_prompt_names_the_addressed_and_who_has_spoken(open_test_app, port):
    models = FakeModels(REPLY)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "Rex, then Nova: what do you think?")
    first = moderator_prompts(models)[0]
    assert '"addressed_in_newest_human_line": ["Rex", "Nova"]' in first
    assert '"spoken_since_newest_human_line": ["Rex", "Nova"]' in first
    assert "Addressed: Rex, Nova. Spoken since the human line: Rex, Nova. Choices: Sage, Rex, FINISH." in first


async def test_finish_is_not_offered_until_everyone_has_spoken_when_nobody_was_addressed(open_test_app, port):
    decisions = [
        {"next_speaker": "FINISH", "reason": "bored"},  # not a choice yet: sent back
        {"next_speaker": "Sage", "reason": "has not spoken since the last human message"},
        {"next_speaker": "Nova", "reason": "has not spoken since the last human message"},
        {"next_speaker": "FINISH", "reason": "everyone has had their say since the last human message"},
    ]
    models = FakeModels(REPLY, decisions)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "What should we launch?")
    prompts = moderator_prompts(models)
    assert "Choices: Nova, Sage, Rex." in prompts[0]
    assert "That decision was invalid: FINISH is not possible yet" in prompts[1]
    assert "Choices: Nova, Rex." in prompts[2]
    assert "Choices: Nova, Sage, FINISH." in prompts[3]  # Rex, the one left, needed no call; now FINISH is offered
    assert port.speakers() == ["sage", "nova", "rex"]
    assert traces(port)[-1] == "[moderator] next: FINISH (everyone has had their say since the last human message)"


async def test_a_moderator_that_never_finishes_is_stopped_after_the_follow_up_turns(open_test_app, port):
    never_finishes = [{"next_speaker": name, "reason": "keep going"} for name in ["Nova", "Sage"] * 10]
    models = FakeModels(REPLY, never_finishes)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))  # max_turns 6
        await run(app, "Debate!")
        # Nova and Sage chosen, Rex the one left, then two follow-ups: five turns, then FINISH without a call.
        assert port.speakers() == ["nova", "sage", "rex", "nova", "sage"]
        assert traces(port)[-1] == "[moderator] next: FINISH (the round has had its turns)"
        assert models.count("moderator") == 4
        await run(app, "Rex?")
    assert port.speakers()[5:] == ["rex", "nova", "sage"]  # one addressed, two follow-ups
    assert traces(port)[-1] == "[moderator] next: FINISH (the round has had its turns)"


async def test_an_addressed_persona_that_fails_has_had_its_turn_and_the_round_goes_on(app, port):
    await app.service.run_command(KEY, Moderate("on"))
    await run(app, "Rex, what now? !!fail 1")  # Rex's model call fails
    assert "[system] Rex has no answer to that right now." in port.notices()
    assert traces(port) == [
        "[moderator] next: Rex (Rex was addressed)",
        "[moderator] next: Nova (Nova has not spoken since the last human message)",
        "[moderator] next: Sage (Sage has not spoken since the last human message)",
        "[moderator] next: FINISH (the round has had its turns)",
    ]
    assert port.speakers() == ["nova", "sage"]


async def test_a_long_free_text_reason_is_shown_clipped(open_test_app, port):
    models = FakeModels(REPLY, [{"next_speaker": "FINISH", "reason": "word " * 100}])
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "Sage?")
    assert traces(port)[-1].startswith("[moderator] next: FINISH (word word")
    assert len(traces(port)[-1]) <= len("[moderator] next: FINISH ()") + 160


async def test_with_moderation_off_an_unaddressed_line_gets_exactly_one_reply(open_test_app, port):
    first_speakers = set()
    for seed in range(8):
        port.posts.clear()
        async with open_test_app(seed=seed) as app:
            # A channel each: the same lines again in one channel would draw the same (copied) replies.
            await run(app, "What should we launch?", "Any other ideas?", "And the budget?", key=f"{KEY}-{seed}")
        speakers = port.speakers()
        assert len(speakers) == 3  # one reply per line, whatever the talkativeness rolls
        assert all(a != b for a, b in zip(speakers, speakers[1:], strict=False))  # nobody answers itself
        first_speakers.add(speakers[0])
    assert len(first_speakers) > 1  # talkativeness picks, not a fixed order


def test_console_moderated_round_with_the_scripted_double(tmp_path: Path):
    config = write_config(tmp_path)
    script = tmp_path / "script.txt"
    script.write_text("/moderate on\nRex, what do you think?\n")
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(config), "--script", str(script), "--verbose"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    round_lines = lines[lines.index("[you] Rex, what do you think?") + 1 :]
    assert [line for line in round_lines if line.startswith("[moderator]")] == [
        "[moderator] next: Rex (Rex was addressed)",
        "[moderator] next: Nova (Nova has not spoken since the last human message)",
        "[moderator] next: Sage (Sage has not spoken since the last human message)",
        "[moderator] next: FINISH (the round has had its turns)",
    ]
    assert [line.split("]")[0] + "]" for line in round_lines if not line.startswith("[moderator]")] == [
        "[Rex]",
        "[Nova]",
        "[Sage]",
    ]


def test_the_embedded_model_gives_a_reason_from_the_fixed_set():
    schema = fixed_reason_schema(decision_schema(["Nova", "Sage", "FINISH"]))
    persona_branch, finish_branch = schema["anyOf"]
    assert persona_branch["properties"]["reason"]["enum"] == list(PICK_REASONS)
    assert finish_branch["properties"]["next_speaker"]["enum"] == ["FINISH"]
    assert finish_branch["properties"]["reason"]["enum"] == list(FINISH_REASONS)
    assert fixed_reason_schema(decision_schema(["Nova", "Sage"]))["properties"]["reason"]["enum"] == list(PICK_REASONS)


async def test_gemma_moderator_decisions_keep_to_the_choices_and_the_fixed_reasons():
    models = build_models(
        ProviderConfig(
            provider="local", local_model="gemma-3-270m", local_cache_dir=Path.home() / ".cache" / "roundtable-test"
        ),
        {},
    )
    for choices in (["Nova", "Sage", "Rex"], ["Nova", "Sage", "FINISH"]):
        messages = moderator_messages(
            [],
            participant_names=["Nova", "Sage", "Rex"],
            addressed=[],
            spoken_since_human=["Rex"],
            last_speaker="Rex",
            choices=choices,
        )
        decision = json.loads((await models.moderator_model(choices).ainvoke(messages)).content)
        assert decision["next_speaker"] in choices
        assert decision["reason"] in (FINISH_REASONS if decision["next_speaker"] == "FINISH" else PICK_REASONS)


class CutOffOnce(FakeModels):
    """The test's persona replies; the moderator is the embedded Gemma, whose first decision stops at
    four tokens, mid-JSON, as a long one stops at the token limit."""

    def __init__(self, embedded: ChatModels) -> None:
        super().__init__(REPLY)
        self.embedded = embedded
        self.moderator_prompts = PromptsSeen()

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        whole = self.embedded.moderator_model(choices).with_config(callbacks=[self.moderator_prompts])
        cut_off = (
            self.embedded.moderator_model(choices).bind(max_tokens=4).with_config(callbacks=[self.moderator_prompts])
        )

        async def decide(messages: list[BaseMessage]) -> BaseMessage:
            return await (whole if self.moderator_prompts.prompts else cut_off).ainvoke(messages)

        return RunnableLambda(decide)


async def test_an_embedded_decision_cut_off_at_its_token_limit_is_asked_for_again_not_taken_for_a_failed_model(
    open_test_app, port, local_models: ChatModels
):
    models = CutOffOnce(local_models)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "What should we launch?")
    first, second, *_ = models.moderator_prompts.prompts
    assert second[: len(first)] == first and second[len(first)].startswith("{")  # its own unfinished decision
    assert second[len(first) + 1] == f"That decision was invalid: {CUT_OFF}. Decide again."
    # The first pick is the model's second answer, with its reason, not the fallback's natural order.
    first_pick = traces(port)[0]
    assert first_pick.startswith("[moderator] next: ") and any(first_pick.endswith(f"{r})") for r in PICK_REASONS)
    assert FALLBACK_PICK not in first_pick
    # Whoever the model picks, the round keeps its limits: each of the three once before FINISH may be
    # chosen, then at most the follow-up turns, never the same persona twice running, and it finishes.
    speakers = port.speakers()
    assert sorted(speakers[:3]) == ["nova", "rex", "sage"]
    assert len(speakers) <= 3 + FOLLOW_UP_TURNS
    assert all(one != other for one, other in zip(speakers, speakers[1:], strict=False))
    assert traces(port)[-1].startswith("[moderator] next: FINISH")
