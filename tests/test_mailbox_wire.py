"""note_to from real models: through the real SDKs against the fake Gemini and OpenAI-compatible
servers (the real Slack app on the fake Slack Web API), and from the embedded Gemma's action step in
the console. The note reaches the recipient's next request on the wire, and nobody else's."""

from __future__ import annotations

import json
import re
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
NOTE_LINE = re.compile(r"\[system\] - (?P<sender>\w+) → (?P<recipient>\w+): (?P<text>.*) \((?:pending|delivered)\)")


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


def test_a_note_the_embedded_gemma_sends_reaches_only_its_recipient(tmp_path: Path) -> None:
    """The action step's constrained JSON, through the console. Whatever the model chooses: each note it
    sends is in /mailbox and in its recipient's next prompt, in nobody else's, and its sender's prompt holds
    the result; with no note, no prompt holds one and the line still got its turn. How often Gemma sends
    the note asked for is a figure for bench/actions.py, not a test's to assert."""
    config = write_config(
        tmp_path,
        {
            "llm": {"provider": "local"},
            "llm.local": EMBEDDED_GEMMA,
        },
    )
    lines = run_console(config, "Sage, send Rex a note that the deadline moved to Friday\n/mailbox\n", timeout=300)
    transcript = lines.splitlines()
    asked = transcript.index("[you] Sage, send Rex a note that the deadline moved to Friday")
    assert transcript[asked + 1].startswith(("[Sage] ", "[system] Sage has no answer to that right now."))
    names = {"nova": "Nova", "sage": "Sage", "rex": "Rex"}
    notes = [NOTE_LINE.fullmatch(line) for line in transcript[transcript.index("[you] /mailbox") + 1 :]]
    sent = [(m["sender"], m["recipient"], m["text"]) for m in notes if m and m["sender"] in names.values()]
    if not sent:
        assert "[system] No notes between personas here yet." in transcript, lines
    prompts = {
        names[persona]: run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", persona).stdout
        for persona in names
    }
    for name, prompt in prompts.items():
        received = [f"[note from {sender}] {text}" for sender, recipient, text in sent if recipient == name]
        assert all(note in prompt for note in received), (name, sent)
        assert received or "[note from" not in prompt, (name, sent)
    for sender, recipient, _ in sent:
        assert f"sent: only {recipient} reads it, at their next turn" in prompts[sender]
