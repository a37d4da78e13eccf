"""Personas act through real providers: the real SDKs (google-genai via langchain-google-genai, and
openai via langchain-openai) against the local fake model servers, with the real Slack app and its
buttons on the fake Slack Web API. What the providers see on the wire is asserted as JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from graph.models.chat import ChatModels
from graph.prompt import NO_RESULT_YET
from storage import approvals
from storage.records import ApprovalStatus
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.providers import PROVIDERS, fake_provider
from tests.fakes.slack_payloads import buttons_of
from tests.slack_harness import SlackHarness, StartSlack

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

NOVAS_ACTIONS = ["publish_post", "send_message", "schedule_post"]  # personas/nova.toml
LAUNCH = {"name": "publish_post", "args": {"channel": "news", "text": "We launched!"}}
REVISED = {"name": "publish_post", "args": {"channel": "news", "text": "We launched. Come and see."}}


@dataclass
class Provider:
    """One provider's fake server, and how to read its wire format."""

    name: str
    server: FakeGemini | FakeOpenAI
    models: ChatModels

    def queue(self, text: str = "", call: dict[str, Any] | None = None) -> None:
        self.server.queue(text, call)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.server.requests]

    def declared_tools(self, body: dict[str, Any]) -> list[str]:
        if self.name == "gemini":
            return [f["name"] for tool in body.get("tools", []) for f in tool.get("functionDeclarations", [])]
        return [tool["function"]["name"] for tool in body.get("tools", [])]

    def paired_results(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """(call name, result text) for every call in the request, asserting each call is directly
        followed by its result and no result stands alone."""
        if self.name == "gemini":
            return _gemini_pairs(body["contents"])
        return _openai_pairs(body["messages"])


def _gemini_pairs(contents: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    answered = 0
    for index, content in enumerate(contents):
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        results = [p["functionResponse"] for p in content["parts"] if "functionResponse" in p]
        answered += len(results)
        if calls:
            following = [p["functionResponse"] for p in contents[index + 1]["parts"] if "functionResponse" in p]
            assert [c["name"] for c in calls] == [r["name"] for r in following], "a functionCall without its response"
            pairs += [(r["name"], str(r["response"])) for r in following]
    assert answered == len(pairs), "a functionResponse without its call"
    return pairs


def _openai_pairs(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    answered = sum(1 for m in messages if m["role"] == "tool")
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        following = messages[index + 1 : index + 1 + len(calls)]
        assert [c["id"] for c in calls] == [m.get("tool_call_id") for m in following], "a tool call without its result"
        pairs += [(c["function"]["name"], m["content"]) for c, m in zip(calls, following, strict=True)]
    assert answered == len(pairs), "a tool message without its call"
    return pairs


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Happy to help with that, tell me more.") as (server, models):
        yield Provider(request.param, server, models)


Started = Callable[..., AbstractAsyncContextManager[SlackHarness]]


async def test_requests_declare_exactly_the_personas_actions(start_slack: StartSlack, provider: Provider) -> None:
    provider.queue("Happy to help with that, tell me more.")
    provider.queue("Gladly: what do you want to weigh first?")  # no copy of Nova's line, which review holds back
    async with start_slack(models=provider.models) as slack:
        await slack.say("Nova, what is new?", "1700000100.000100")
        await slack.say("Sage, and you?", "1700000101.000100")

    nova, sage = provider.bodies
    assert provider.declared_tools(nova) == NOVAS_ACTIONS
    assert provider.declared_tools(sage) == ["note_to", "remember"]  # personas/sage.toml: notes only
    # The prompt tells Nova what its actions do and that they wait for a person.
    system = str(nova.get("systemInstruction") or nova["messages"][0])
    assert "publish_post: Publish a post in a channel" in system
    assert "waits for a person's approval" in system and "Never say an action is done" in system


async def test_a_tool_call_waits_for_approval_and_its_result_goes_back_paired(
    start_slack: StartSlack, provider: Provider
) -> None:
    async with start_slack(models=provider.models) as slack:
        provider.queue("Let me put that out for approval.", LAUNCH)  # text and a call together
        await slack.say("Nova, publish 'We launched!' in #news", "1700000110.000100")

        [request] = slack.approval_requests()
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        assert (pending.action, pending.args) == ("publish_post", {"channel": "news", "text": "We launched!"})
        assert {b["action_id"] for b in buttons_of(request)} == {
            "approval_approve",
            "approval_reject",
            "approval_feedback",
            "approval_view",
            "approval_revise",
        }
        assert [p["text"] for p in slack.posts() if p.get("username") == "Nova"] == [
            "Let me put that out for approval."
        ]
        assert slack.posts_to("news") == []

        # Asked again while it waits, Nova's call is answered as "not run yet": never an orphan.
        await slack.say("Nova, is it out yet?", "1700000111.000100")
        assert provider.paired_results(provider.bodies[-1]) == [("publish_post", _wrapped(provider, NO_RESULT_YET))]

        provider.queue("It is live in #news now.")
        await slack.click("approval_approve", request)
        await slack.click("approval_approve", request)  # a second click runs nothing

        assert [p["text"] for p in slack.posts_to("news")] == ["We launched!"]
        follow_up = provider.bodies[-1]
        [(name, result)] = provider.paired_results(follow_up)
        assert name == "publish_post" and "Approved by Bea, executed: posted in #news" in result
        assert slack.posts()[-1]["text"] == "It is live in #news now."


async def test_rejection_feedback_reaches_the_model_and_the_revision_names_the_old_request(
    start_slack: StartSlack, provider: Provider
) -> None:
    async with start_slack(models=provider.models) as slack:
        provider.queue("", LAUNCH)  # a call with no text: only the approval request is posted
        await slack.say("Nova, announce the launch in #news", "1700000120.000100")
        [first] = slack.approval_requests()
        [old] = await approvals.pending(slack.bot.roundtable.db)
        assert [p for p in slack.posts() if p.get("username") == "Nova"] == []

        provider.queue("Fair point, here is a calmer version.", REVISED)
        await slack.click("approval_feedback", first)
        [opened] = [call.args for call in slack.fake.calls_to("views.open")]
        await slack.submit_feedback(opened["view"], "too salesy")

        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "publish_post" and "Rejected by Bea: too salesy" in result
        _, second = slack.approval_requests()
        [new] = await approvals.pending(slack.bot.roundtable.db)
        assert new.revises == old.id and new.args == REVISED["args"]
        assert f"revises #{old.id}" in second["text"]

        provider.queue("Posted.")
        await slack.click("approval_approve", second)
        assert [p["text"] for p in slack.posts_to("news")] == ["We launched. Come and see."]
        results = provider.paired_results(provider.bodies[-1])
        assert [n for n, _ in results] == ["publish_post", "publish_post"]
        assert "too salesy" in results[0][1] and "executed: posted in #news" in results[1][1]
        old_now = await approvals.get(slack.bot.roundtable.db, old.id)
        assert old_now is not None and old_now.status is ApprovalStatus.REJECTED


def _wrapped(provider: Provider, text: str) -> str:
    """A tool result as the provider's request shows it: Gemini wraps it in a response object."""
    return str({"output": text}) if provider.name == "gemini" else text
