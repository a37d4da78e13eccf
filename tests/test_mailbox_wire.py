"""note_to from real models: through the real SDKs against the fake Gemini and OpenAI-compatible
servers (the real Slack app on the fake Slack Web API), and from the embedded Gemma's action step in
the console. The note reaches the recipient's next request on the wire, and nobody else's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EMBEDDED_GEMMA, run_bot, run_console, write_config
from tests.slack_harness import StartSlack
from tests.test_actions_wire import Provider, _wrapped, provider  # noqa: F401  (the provider fixture)

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

DEADLINE = {"name": "note_to", "args": {"persona": "Rex", "text": "The deadline moved to Friday"}}
TO_PIXEL = {"name": "note_to", "args": {"persona": "Pixel", "text": "Pick a colour"}}
NOTE = "[note from Sage] The deadline moved to Friday"


def user_texts(server: Provider, body: dict[str, Any]) -> list[str]:
    """The texts of the request's user-role messages."""
    if server.name == "gemini":
        return [p["text"] for c in body["contents"] if c["role"] == "user" for p in c["parts"] if "text" in p]
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def system_of(server: Provider, body: dict[str, Any]) -> str:
    return json.dumps(body.get("systemInstruction") or body["messages"][0])


async def test_a_note_called_on_the_wire_reaches_only_the_recipients_next_request(
    start_slack: StartSlack,
    provider: Provider,  # noqa: F811
) -> None:
    async with start_slack(models=provider.models) as slack:
        provider.queue("I will let Rex know.", DEADLINE)
        provider.queue("Done: Rex reads it at his next turn.")  # asked again with the note's result
        await slack.say("Sage, send Rex a note that the deadline moved to Friday", "1700000400.000100")
        sage, sage_again, rex = provider.bodies  # both named: Sage first (twice: call, then answer), then Rex
        assert "You are Sage" in system_of(provider, sage) and "You are Rex" in system_of(provider, rex)
        assert provider.declared_tools(sage) == ["note_to", "remember"]
        assert provider.paired_results(sage_again) == [
            ("note_to", _wrapped(provider, "sent: only Rex reads it, at their next turn"))
        ]
        assert NOTE in user_texts(provider, rex)
        # The words beside the call are not posted: the turn went on to its answer.
        assert [p["text"] for p in slack.posts()] == [
            "Done: Rex reads it at his next turn.",
            "Happy to help with that, tell me more.",
        ]

        provider.queue("The plan is to ship on Friday.")
        await slack.say("Nova, what is the plan?", "1700000401.000100")
        assert not any("[note from" in text for text in user_texts(provider, provider.bodies[-1]))

        # A note to a persona not present is a tool error, paired with its call like the first one's result.
        provider.queue("", TO_PIXEL)
        provider.queue("Pixel is not here to read one.")
        await slack.say("Sage, and one for Pixel?", "1700000402.000100")
        results = provider.paired_results(provider.bodies[-1])
        assert results[0] == ("note_to", _wrapped(provider, "sent: only Rex reads it, at their next turn"))
        assert results[-1][0] == "note_to" and "error: 'pixel' is not in this conversation" in results[-1][1]

    assert not any("deadline" in post["text"].lower() for post in slack.posts())


def test_the_embedded_gemma_sends_a_note_when_asked(tmp_path: Path) -> None:
    """The action step's constrained JSON proposes note_to(persona='rex', ...) from the request alone."""
    config = write_config(
        tmp_path,
        {
            "llm": {"provider": "local"},
            "llm.local": EMBEDDED_GEMMA,
        },
    )
    transcript = run_console(config, "Sage, send Rex a note that the deadline moved to Friday\n/mailbox\n", timeout=300)
    # Rex was named too, so Rex's turn came next and read it.
    assert "[system] - Sage → Rex: The deadline moved to Friday (delivered)" in transcript.splitlines(), transcript
    prompts = {
        persona: run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", persona).stdout
        for persona in ("rex", "nova", "sage")
    }
    assert NOTE in prompts["rex"]
    assert "[note from" not in prompts["nova"] and "[note from" not in prompts["sage"]
    assert "sent: only Rex reads it, at their next turn" in prompts["sage"]
