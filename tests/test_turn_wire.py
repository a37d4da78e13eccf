"""A persona's turn on the wire (the real Gemini and OpenAI SDKs against the local fakes): its request
ends with the question put to it, naming who asked; a retry's note is an instruction in that last
message and in no persona's history; a pass posts nothing and is no failure, but a person's direct
question cannot be passed; a skipped turn of a one-line round gives at most a short notice."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.inbound import Inbound
from graph.observe import TURNS
from graph.prompt import estimate_tokens
from graph.turn_text import any_question, question_tokens_at_most
from storage import channels
from tests.fakes.providers import PROVIDERS, Provider, fake_provider
from tests.recording_port import RecordingPort

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

KEY = "console:turns"
GOOD = "Start with Meditations by Marcus Aurelius; it is short and calm."


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest):
    async with fake_provider(request.param, GOOD) as (server, models):
        yield Provider(request.param, server, models)


def persona_bodies(provider: Provider) -> list[dict[str, Any]]:
    """The requests that asked for a persona's reply (not the moderator's JSON, not a summary)."""
    if provider.name == "gemini":
        return [b for b in provider.bodies if "responseMimeType" not in b.get("generationConfig", {})]
    return [b for b in provider.bodies if "response_format" not in b]


def last_user_text(provider: Provider, body: dict[str, Any]) -> str:
    """The text of the request's last message, which must be the user's (Gemini: the last content)."""
    if provider.name == "gemini":
        last = body["contents"][-1]
        assert last["role"] == "user"
        return "".join(part.get("text", "") for part in last["parts"])
    last = body["messages"][-1]
    assert last["role"] == "user"
    return str(last["content"])


async def say(app: Any, text: str) -> None:
    await app.service.handle(Inbound(KEY, "u1", "Ana", text))
    await app.service.wait_idle(KEY)


def passes() -> float:
    return TURNS.labels("passed")._value.get()


async def test_the_request_ends_with_the_question_naming_who_asked(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    async with open_test_app(models=provider.models) as app:
        await say(app, "Sage, any book recommendations?")
    asked = last_user_text(provider, persona_bodies(provider)[-1])
    assert asked.startswith("Ana asked you, Sage: «Sage, any book recommendations?»")
    assert "Answer the way Sage does: names the assumption" in asked  # the persona's stance
    assert "PASS" not in asked  # a person's direct question cannot be passed
    assert port.posts[-1][1:3] == ("sage", GOOD)


async def test_a_retry_note_is_an_instruction_and_in_no_history(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    provider.server.queue("ok")  # too short: written again with the review's reason
    async with open_test_app(models=provider.models) as app:
        await say(app, "Sage, any book recommendations?")
        bodies = persona_bodies(provider)
        assert len(bodies) == 2
        retry = last_user_text(provider, bodies[1])
        assert "Your last draft was not posted: the reply was too short" in retry
        assert "[system]" not in retry and retry.startswith("Ana asked you, Sage:")
        assert port.posts[-1][1:3] == ("sage", GOOD)
        for persona in ("sage", "nova", "rex"):  # what `roundtable prompt` prints
            prompt = await app.engine.prompt_for(KEY, persona)
            assert not [m for m in prompt if "not posted" in str(m.content) or "asked you" in str(m.content)]


async def test_a_pass_posts_nothing_and_is_no_failure(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    """A moderated round to nobody: Sage answers first (never offered the pass), then Rex passes."""
    for reply in (
        json.dumps({"next_speaker": "Sage", "reason": "x"}),
        GOOD,
        json.dumps({"next_speaker": "Rex", "reason": "x"}),
        "PASS",
    ):
        provider.server.queue(reply)
    before = passes()
    async with open_test_app({"moderation": {"enabled": True, "max_turns": 2}}, models=provider.models) as app:
        await say(app, "Quiet in here today. Anything to read?")
        channel = await channels.get_channel(app.db, KEY)
    first, second = (last_user_text(provider, body) for body in persona_bodies(provider))
    assert "You were picked to answer it, Sage." in first and "PASS" not in first
    assert "Sage answered already: add only what they did not say." in second
    assert "reply with the single word PASS" in second
    assert [(who, text) for _, who, text, _ in port.posts] == [("sage", GOOD)] and port.notices() == []
    assert passes() == before + 1
    assert channel is not None and channel.failures_in_a_row == 0


async def test_the_one_answer_to_a_line_to_nobody_is_never_offered_the_pass(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    async with open_test_app(models=provider.models) as app:
        await say(app, "Quiet in here today. Anything to read?")  # moderation off: one natural pick
    asked = last_user_text(provider, persona_bodies(provider)[-1])
    assert "You were picked to answer it" in asked and "PASS" not in asked
    assert len(port.posts) == 1


async def test_a_person_s_direct_question_cannot_be_passed(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    provider.server.queue("PASS")
    before = passes()
    async with open_test_app(models=provider.models) as app:
        await say(app, "Rex, is 'Bean There' too cheesy?")
    bodies = persona_bodies(provider)
    assert len(bodies) == 2
    assert "you were asked by name, so answer the question" in last_user_text(provider, bodies[1])
    assert port.posts[-1][1:3] == ("rex", GOOD)
    assert passes() == before


async def test_a_one_line_round_skip_gives_only_the_short_notice(
    open_test_app: Any, port: RecordingPort, provider: Provider
) -> None:
    line = "Sage, how many people usually join these?"
    for _ in range(3):
        provider.server.queue(line)  # an echo, every time: never posted
    async with open_test_app(models=provider.models) as app:
        await say(app, line)
    assert port.posts == []
    assert port.notices() == ["[system] Sage has no answer to that right now."]


async def test_the_window_leaves_room_for_the_question(open_test_app: Any, provider: Provider) -> None:
    """[history] token_budget holds the whole request: history, then the turn's question."""
    budget = 1500
    async with open_test_app({"history": {"token_budget": budget}}, models=provider.models) as app:
        for n in range(60):
            await say(app, f"Note {n}: the launch checklist has grown again, with one more item about the venue.")
        sage = app.personas["sage"]
        prompt = await app.engine.prompt_for(KEY, "sage")
    history_tokens = sum(estimate_tokens(str(m.content)) for m in prompt)
    assert history_tokens > budget // 3  # the window is full ...
    assert (
        history_tokens + question_tokens_at_most(any_question(sage.display_name, sage.stance)) <= budget
    )  # ... with room
