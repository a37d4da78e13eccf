"""The optional judge: its verdict as structured output on the fake Gemini and the fake OpenAI-compatible
server (the real SDKs), under schema-constrained decoding on the embedded Gemma, and what a verdict
does to a draft in a round."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.inbound import Inbound
from graph.judge import JUDGE_SCHEMA, VERDICTS, Judgement, judge_draft, parse_judgement
from graph.models.chat import ChatModels
from personas import load_personas
from tests.fakes.providers import PROVIDERS, Provider, fake_provider
from tests.recording_port import RecordingPort

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

SAGE = load_personas()["sage"]
CONVERSATION = ["Ana: Should we open on Sundays?", "Rex: Sundays are when the rent is cheapest to waste."]
KEY = "console:judged"


def said_by(port: RecordingPort, persona: str) -> list[str]:
    return [text for _, who, text, _ in port.posts if who == persona]


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Sundays suit families; I would open at ten.") as (s, m):
        yield Provider(request.param, s, m)


def test_a_verdict_is_read_only_when_it_is_one_of_the_schema() -> None:
    assert parse_judgement('{"verdict": "copies", "reason": "same as Rex"}') == Judgement("copies", "same as Rex")
    assert parse_judgement('{"verdict": "fine", "reason": ""}') is None
    assert parse_judgement("ok") is None
    assert Judgement("ok", "good").note is None
    assert Judgement("off_topic", "it talks about rent.").note == "the judge found it off topic: it talks about rent"


async def test_the_judge_answers_under_its_schema_on_the_wire(provider: Provider) -> None:
    provider.server.queue(json.dumps({"verdict": "off_topic", "reason": "it never says whether to open"}))
    model = provider.models.judge_model(JUDGE_SCHEMA)

    judgement = await judge_draft(model, SAGE, CONVERSATION, "The weather was lovely.", attempts=1, backoff_seconds=0)

    assert judgement == Judgement("off_topic", "it never says whether to open")
    [body] = provider.bodies
    assert provider.schema_sent(body) == JUDGE_SCHEMA
    [asked] = provider.texts(body)
    assert "Ana: Should we open on Sundays?" in asked and asked.endswith("Draft by Sage:\nThe weather was lovely.")


async def test_a_faulted_draft_is_written_again_with_the_judges_reason(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    provider.server.queue("The weather was lovely last week.")  # Sage's first draft
    provider.server.queue(json.dumps({"verdict": "off_topic", "reason": "it never says whether to open"}))
    provider.server.queue("Open on Sundays, but only from ten to two.")  # written again
    provider.server.queue(json.dumps({"verdict": "ok", "reason": "answers the question"}))
    async with open_test_app({"review": {"judge": "on"}}, models=provider.models) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", "Sage, should we open on Sundays?"))
        await app.service.wait_idle()

    assert said_by(port, "sage") == ["Open on Sundays, but only from ten to two."]
    persona_bodies = [b for b in provider.bodies if "Draft by" not in "\n".join(provider.texts(b))]
    assert provider.texts(persona_bodies[1])[-1].endswith(  # an instruction in the turn's question
        "Your last draft was not posted: the judge found it off topic: it never says whether to open."
        " Write a new reply."
    )


async def test_a_draft_the_judge_keeps_faulting_is_skipped_never_posted(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    for _ in range(3):  # the draft and its two retries
        provider.server.queue("Rex is right, the rent is wasted on Sundays anyway.")
        provider.server.queue(json.dumps({"verdict": "copies", "reason": "it only repeats Rex"}))
    async with open_test_app({"review": {"judge": "on"}}, models=provider.models) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", "Sage, should we open on Sundays?"))
        await app.service.wait_idle()

    assert said_by(port, "sage") == []
    assert port.notices() == ["[system] Sage has no answer to that right now."]


async def test_with_the_judge_off_no_draft_is_judged(provider: Provider, open_test_app, port: RecordingPort) -> None:
    provider.server.queue("Open on Sundays, but only from ten to two.")
    async with open_test_app(models=provider.models) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", "Sage, should we open on Sundays?"))
        await app.service.wait_idle()

    assert said_by(port, "sage") == ["Open on Sundays, but only from ten to two."]
    assert len(provider.bodies) == 1


async def test_the_embedded_judge_answers_a_verdict_of_the_schema(local_models: ChatModels) -> None:
    model = local_models.judge_model(JUDGE_SCHEMA)
    judgement = await judge_draft(
        model, SAGE, CONVERSATION, "Ana: Should we open on Sundays?", attempts=1, backoff_seconds=0
    )
    # Constrained decoding: whatever the 270M model thinks of the draft, it says it as a verdict.
    assert judgement is not None and judgement.verdict in VERDICTS
