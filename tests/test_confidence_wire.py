"""A stated confidence through each provider's wire format: the real SDKs (google-genai via
langchain-google-genai, openai via langchain-openai) against the local fake model servers, and the
real Slack app on the fake Slack Web API. Every declared action offers an optional `confidence`,
and a call stated less sure than [approvals] min_confidence waits for an approver in a channel
where it would otherwise run at once."""

from __future__ import annotations

from typing import Any

import pytest

from storage import approvals
from tests.slack_harness import StartSlack
from tests.test_actions_wire import NOVAS_ACTIONS, Provider, provider  # noqa: F401  (the fixture)

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

TRIGGERS = {"approvals": {"sensitive": [], "min_confidence": 0.6}}  # nothing waits but an unsure call
NEWS = {"channel": "news", "text": "We launched!"}


def declared_parameters(wire: Provider, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each declared tool's parameter schema, by tool name, as the provider's request carries it."""
    if wire.name == "gemini":
        declarations = [f for tool in body.get("tools", []) for f in tool.get("functionDeclarations", [])]
        return {f["name"]: f["parameters"] for f in declarations}
    return {tool["function"]["name"]: tool["function"]["parameters"] for tool in body.get("tools", [])}


async def test_every_declared_action_offers_an_optional_confidence(
    start_slack: StartSlack,
    provider: Provider,  # noqa: F811  (the fixture imported above)
) -> None:
    async with start_slack(TRIGGERS, models=provider.models) as slack:
        await slack.say("Nova, what is new?", "1700000200.000100")

    [body] = provider.bodies
    declared = declared_parameters(provider, body)
    assert list(declared) == NOVAS_ACTIONS
    for parameters in declared.values():
        confidence = parameters["properties"]["confidence"]
        assert confidence["type"].lower() == "number" and "from 0 to 1" in confidence["description"]
        assert "confidence" not in parameters["required"]


async def test_a_low_stated_confidence_waits_and_a_high_one_runs(
    start_slack: StartSlack,
    provider: Provider,  # noqa: F811  (the fixture imported above)
) -> None:
    async with start_slack(TRIGGERS, models=provider.models) as slack:
        provider.queue("", {"name": "publish_post", "args": {**NEWS, "confidence": 0.3}})
        await slack.say("Nova, publish 'We launched!' in #news", "1700000210.000100")

        [request] = slack.approval_requests()
        shown = "waits: confidence 0.3 &lt; min_confidence 0.6"  # Slack's escaping of "<"
        assert request["text"].endswith(shown)
        assert any(
            shown in element.get("text", "") for block in request["blocks"] for element in block.get("elements", [])
        )
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        assert pending.args == NEWS and pending.confidence == 0.3  # kept with the approval, not in the arguments
        assert slack.posts_to("news") == []

        provider.queue(
            "", {"name": "publish_post", "args": {"channel": "news", "text": "Sure now.", "confidence": 0.9}}
        )
        await slack.say("Nova, publish 'Sure now.' in #news", "1700000211.000100")
        assert [p["text"] for p in slack.posts_to("news")] == ["Sure now."]  # ran at once: nothing else waits
        assert len(slack.approval_requests()) == 1
