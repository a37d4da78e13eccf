"""remember from real models: through the real SDKs against the fake Gemini and OpenAI-compatible
servers (the real Slack app on the fake Slack Web API). The note is in the persona's next request on
the wire, under "What you noted", and its call is answered without any approval."""

from __future__ import annotations

import pytest

from tests.slack_harness import StartSlack
from tests.test_actions_wire import Provider, _wrapped, provider  # noqa: F401  (the provider fixture)
from tests.test_mailbox_wire import system_of

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

LAUNCH = {"name": "remember", "args": {"text": "The launch is on Friday"}}


async def test_remember_called_on_the_wire_is_noted_in_the_next_request_without_approval(
    start_slack: StartSlack,
    provider: Provider,  # noqa: F811
) -> None:
    async with start_slack(models=provider.models) as slack:
        provider.queue("I will keep that in mind.", LAUNCH)
        provider.queue("Got it, I have written that down.")  # asked again in the same turn, with the note's result
        await slack.say("Sage, remember that the launch is on Friday.", "1700000500.000100")
        first, again = provider.bodies
        assert "What you noted (your own" not in system_of(provider, first)
        [(name, result)] = provider.paired_results(again)
        assert name == "remember" and result == _wrapped(
            provider, "noted: 'The launch is on Friday'; you see it in every later prompt"
        )

        provider.queue("It is on Friday, as noted.")
        await slack.say("Sage, when is the launch?", "1700000501.000100")
        after = provider.bodies[-1]
        assert "What you noted (your own notes, numbered):\\n1. The launch is on Friday" in system_of(provider, after)
        assert not slack.fake.calls_to("chat.postEphemeral")  # no approval request was shown to anyone
    # The note is said in the channel; the words beside the call are not posted: the turn went on to its answer.
    assert [p["text"] for p in slack.posts()] == [
        "Sage noted: The launch is on Friday",
        "Got it, I have written that down.",
        "It is on Friday, as noted.",
    ]
