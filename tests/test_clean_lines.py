"""What the review never posts, on the wire: the real openai SDK (langchain-openai) against the fake
OpenAI-compatible server, and the real google-genai SDK (langchain-google-genai) against the fake
Gemini, each answering what a small model behind llama.cpp or Ollama really writes (issue 32):
template syntax as text, a tool call written as JSON, a copy of the persona's own example line, the
persona calling itself by name, the review's own note, a paragraph where a chat line would do."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.approval_desk import Actor
from bot.inbound import Inbound
from personas import load_personas
from storage import approvals
from storage.records import ApprovalStatus
from tests.fakes.providers import PROVIDERS, Provider, fake_provider
from tests.mcp_setup import calls_received, notes_environment, stdio_sections
from tests.recording_port import RecordingPort
from tests.slack_harness import StartSlack

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

KEY = "console:clean"
YOU = Actor("you", "you")
PERSONAS = load_personas()
LAUNCH_ARGS = {"channel": "news", "text": "We launched!"}
# The call as each small model writes it in its content when the server does not parse it: Qwen 2.5's
# <tool_call> (llama.cpp returns it as content when its Hermes parser fails), a ```json block.
WRITTEN_CALLS = {
    "openai": '<tool_call>\n{"name": "publish_post", "arguments": ' + json.dumps(LAUNCH_ARGS) + "}\n</tool_call>",
    "gemini": 'Sure.\n```json\n{"name": "publish_post", "arguments": ' + json.dumps(LAUNCH_ARGS) + "}\n```",
}


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Happy to help, tell me more about it.") as (server, models):
        yield Provider(request.param, server, models)


def said_by(port: RecordingPort, persona: str) -> list[str]:
    return [text for _, who, text, _ in port.posts if who == persona]


def retry_notes(provider: Provider) -> list[str]:
    """The review's notes the persona was sent, in the order of the requests: each in the request's
    last message, the turn's question, as an instruction (never a "[system]" line of the chat)."""
    notes = [
        text[text.index("Your last draft was not posted") :]
        for body in provider.bodies
        for text in provider.texts(body)[-1:]
        if "Your last draft was not posted" in text
    ]
    assert not [text for body in provider.bodies for text in provider.texts(body) if "[system] Your last" in text]
    return notes


async def ask(provider: Provider, open_test_app, text: str, sections: dict | None = None) -> None:
    async with open_test_app(sections, models=provider.models) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", text))
        await app.service.wait_idle()


# What Qwen2.5-Coder-1.5B posted through llama.cpp (bench/quality.py's served setup).
LEAKED = ("<tools>", '[tools] send_message(to="Ana", text="Remote work needs careful planning.", confidence=1)')


@pytest.mark.parametrize("leaked", LEAKED)
async def test_template_syntax_written_as_text_is_written_again_never_posted(
    provider: Provider, open_test_app, port: RecordingPort, leaked: str
) -> None:
    provider.server.queue(leaked)
    provider.server.queue("Launch on Monday, before the newsletter goes out.")
    await ask(provider, open_test_app, "Nova, when should we launch the app?")

    assert said_by(port, "nova") == ["Launch on Monday, before the newsletter goes out."]
    assert not any("tools" in text for _, _, text, _ in port.posts)
    assert "template or tool syntax" in retry_notes(provider)[0]


async def approve_a_written_call(
    provider: Provider, open_test_app, port: RecordingPort, follow_up: str, *written_again: str
) -> None:
    """Nova writes publish_post into its content; it waits for approval like a native call; approved,
    it runs, and Nova's follow-up answers `follow_up` (then `written_again`, if the review asks again)."""
    provider.server.queue(WRITTEN_CALLS[provider.name])
    for answer in (follow_up, *written_again):
        provider.server.queue(answer)
    async with open_test_app(models=provider.models) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", "Nova, publish 'We launched!' in #news"))
        await app.service.wait_idle()
        [pending] = await approvals.pending(app.db)  # the same policy as a native call: publish_post waits
        assert (pending.persona_id, pending.action, pending.args) == ("nova", "publish_post", LAUNCH_ARGS)
        assert not any("publish_post" in text or "```" in text for _, _, text, _ in port.posts)
        decided = await app.service.approval_desk.decide(pending.id, YOU, approve=True)
        await app.service.wait_idle()
        done = await approvals.get(app.db, pending.id)
    assert decided.ok and done is not None and done.status is ApprovalStatus.EXECUTED
    assert port.executed == [("nova", "publish_post", LAUNCH_ARGS)]


async def test_a_tool_call_written_in_the_content_is_a_real_call_that_waits_for_approval(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    await approve_a_written_call(provider, open_test_app, port, "Posted, as you asked.")

    # Nova's follow-up request carries the call as a real one, paired with its result.
    follow_up = provider.bodies[-1]
    if provider.name == "gemini":
        parts = [part for content in follow_up["contents"] for part in content["parts"]]
        assert [p["functionCall"]["name"] for p in parts if "functionCall" in p] == ["publish_post"]
        assert [p["functionResponse"]["name"] for p in parts if "functionResponse" in p] == ["publish_post"]
    else:
        [call] = [c for m in follow_up["messages"] for c in m.get("tool_calls") or []]
        assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == ("publish_post", LAUNCH_ARGS)
        [result] = [m for m in follow_up["messages"] if m["role"] == "tool"]
        assert result["tool_call_id"] == call["id"]
    assert said_by(port, "nova") == ["Posted, as you asked."]


async def test_a_follow_up_in_template_syntax_is_not_posted(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    await approve_a_written_call(
        provider, open_test_app, port, "Posted.<|im_end|>\n<|im_start|>user", "Posted in #news, as you asked."
    )

    # The follow-up goes through the turn's review: its template syntax is written again, never posted.
    assert said_by(port, "nova") == ["Posted in #news, as you asked."]


async def test_a_read_only_mcp_call_written_as_bare_json_runs_at_once_on_slack(
    start_slack: StartSlack, provider: Provider, tmp_path: Path
) -> None:
    with notes_environment(tmp_path) as call_log:
        async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
            # Llama 3.x's form, as a server that does not parse it returns it: the whole call as content.
            provider.server.queue('{"name": "read_note", "parameters": {"title": "groceries"}}')
            await slack.say("Rex, what is on the groceries note?", "1700000230.000100")

            assert slack.approval_requests() == []  # read-only: it runs at once, as a native call would
            assert [(c["tool"], c["args"]) for c in calls_received(call_log)] == [("read_note", {"title": "groceries"})]
            events = await approvals.audit_events(slack.bot.roundtable.db, ["rex"])
            # The same durable claim and run as a native call's (tests/test_mcp_wire.py)
            assert [(e.action, e.event, e.actor) for e in events] == [
                ("notes.read_note", "approved", "policy"),
                ("notes.read_note", "executed", None),
            ]
            assert not any("read_note" in post.get("text", "") for post in slack.posts())


async def test_a_copy_of_the_personas_own_example_is_written_again(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    nova = PERSONAS["nova"]
    provider.server.queue(nova.examples[1])  # "Big bet: launch it on a Tuesday morning, ..."
    provider.server.queue("Monday morning, with a short post and a demo video.")
    await ask(provider, open_test_app, "Nova, when should we launch the app?")

    assert said_by(port, "nova") == ["Monday morning, with a short post and a demo video."]
    assert "copied one of your example lines" in retry_notes(provider)[0]


@pytest.mark.parametrize(
    "calls_itself", ["Rex, do you really think Monday is safe for this launch?", "Sure, Rex, Monday is safe enough."]
)
async def test_a_persona_that_calls_itself_by_name_is_written_again(
    provider: Provider, open_test_app, port: RecordingPort, calls_itself: str
) -> None:
    provider.server.queue(calls_itself)  # from Rex
    provider.server.queue("Monday? Show me the test results first.")
    await ask(provider, open_test_app, "Rex, is Monday safe for the launch?")

    assert said_by(port, "rex") == ["Monday? Show me the test results first."]
    assert "your own name" in retry_notes(provider)[0]


# What Qwen2.5-Coder-1.5B opened with: in-process, when a task step asked "Ana: Rex, ..." (14 of 141
# recorded replies); served by llama.cpp, a tag of a name nobody has (2 of 100 on the quality bench).
@pytest.mark.parametrize("opening", ["Sure, Rex.", "[MochaMaven]"])
async def test_an_opening_that_is_none_of_the_personas_words_is_cut_before_posting(
    provider: Provider, open_test_app, port: RecordingPort, opening: str
) -> None:
    provider.server.queue(f"{opening} Monday is fine once the tests pass.")
    await ask(provider, open_test_app, "Rex, is Monday safe for the launch?")

    assert said_by(port, "rex") == ["Monday is fine once the tests pass."]
    assert retry_notes(provider) == []


async def test_a_second_line_of_the_personas_own_is_cut_before_posting(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    # What Qwen2.5-Coder-1.5B wrote on the quality bench: its line, then a second one of its own.
    provider.server.queue("Monday is fine once the tests pass. Rex: Are you sure about the launch date?")
    await ask(provider, open_test_app, "Rex, is Monday safe for the launch?")

    assert said_by(port, "rex") == ["Monday is fine once the tests pass."]
    assert retry_notes(provider) == []


async def test_the_reviews_note_is_never_posted(provider: Provider, open_test_app, port: RecordingPort) -> None:
    provider.server.queue("Sage, should we open on Sundays?")  # an echo: the review sends its note
    # What the 0.5B model then wrote: the note's own words, and a suggestion after them.
    provider.server.queue("The reply repeated the message it answers. You could answer it in your own words.")
    provider.server.queue("Open on Sundays, but only from ten to two.")
    await ask(provider, open_test_app, "Sage, should we open on Sundays?")

    assert said_by(port, "sage") == ["Open on Sundays, but only from ten to two."]
    assert not any("the reply repeated" in text.casefold() for _, _, text, _ in port.posts)
    first, second = retry_notes(provider)[:2]
    assert "repeated the message it answers" in first and "repeated this note" in second


async def test_a_long_reply_is_cut_at_a_sentence_end_after_max_sentences(
    provider: Provider, open_test_app, port: RecordingPort
) -> None:
    provider.server.queue(
        "Open at 7 a.m. on weekdays. Close at three on Sundays! Who opens on Mondays? Sam does. "
        "Then we review it in a month, e.g. after the first invoices."
    )
    provider.server.queue("Hours: seven to three, and a late Thursday. Staff: four. Budget: fine. Risks: none.")
    await ask(provider, open_test_app, "Rex, opening hours?")
    await ask(provider, open_test_app, "Rex, and staffing?", {"review": {"max_sentences": 2}})

    assert said_by(port, "rex") == [
        "Open at 7 a.m. on weekdays. Close at three on Sundays! Who opens on Mondays?",
        "Hours: seven to three, and a late Thursday. Staff: four.",
    ]
