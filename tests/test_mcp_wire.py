"""Personas use tools from a real MCP server (tests/mcp_notes_server.py, over stdio and streamable
HTTP on 127.0.0.1) through the real providers' SDKs on the fake Gemini and OpenAI servers, with the
real Slack app and its buttons on the fake Slack Web API. What the server received is read from its
own call log; what the models saw is read from the fake providers' requests."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import approvals, tool_grants
from storage.records import ApprovalStatus
from tests.fakes.providers import PROVIDERS, fake_provider
from tests.fakes.slack_payloads import buttons_of
from tests.mcp_setup import calls_received, http_notes_server, notes_environment, server_pid, stdio_sections
from tests.slack_harness import KEY, StartSlack
from tests.test_actions_wire import Provider

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

WRITE = {"name": "write_note", "args": {"title": "launch", "text": "We launched on Monday"}}
READ = {"name": "read_note", "args": {"title": "groceries"}}
DOWN_NOTICE = "The MCP server notes is down"


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Happy to help with that, tell me more.") as (server, models):
        yield Provider(request.param, server, models)


@pytest.fixture
def call_log(tmp_path: Path) -> Iterator[Path]:
    with notes_environment(tmp_path) as log:
        yield log


def _notices(slack: Any) -> list[str]:
    return [p["text"] for p in slack.posts() if p.get("username") != "Nova" and DOWN_NOTICE in p.get("text", "")]


async def test_a_personas_request_declares_exactly_the_mcp_tools_its_file_allows(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    # Three replies of their own: the review never posts a copy of an earlier one.
    for reply in ("Rex thinks it will break.", "Sage would wait a week.", "Nova has a launch to show."):
        provider.server.queue(reply)
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        await slack.say("Rex, what do you think?", "1700000200.000100")
        await slack.say("Sage, and you?", "1700000201.000100")
        await slack.say("Nova, what is new?", "1700000202.000100")

    rex, sage, nova = provider.bodies
    assert provider.declared_tools(rex) == ["note_to", "remember", "read_note", "write_note"]  # tools = ["notes"]
    assert provider.declared_tools(sage) == ["note_to", "remember", "read_note"]  # tools = ["notes.read_note"]
    assert provider.declared_tools(nova) == ["publish_post", "send_message", "schedule_post"]  # no tools
    # The server's own description and input schema, as it listed them.
    if provider.name == "gemini":
        [write] = [f for t in rex["tools"] for f in t["functionDeclarations"] if f["name"] == "write_note"]
        assert write["description"] == "Write (or replace) the note with this title in the team notebook."
        schema = write.get("parametersJsonSchema") or write.get("parameters")
    else:
        [write] = [t["function"] for t in rex["tools"] if t["function"]["name"] == "write_note"]
        assert write["description"] == "Write (or replace) the note with this title in the team notebook."
        schema = write["parameters"]
    assert {"title", "text"} <= set(schema["properties"]) and set(schema["required"]) == {"title", "text"}
    assert calls_received(call_log) == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_write_tool_waits_for_approve_and_then_runs_exactly_once_with_its_result_paired(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path, transport: str
) -> None:
    sections = stdio_sections(tmp_path)
    with http_notes_server(tmp_path) if transport == "http" else _nothing() as url:
        if url:
            sections["mcp"]["servers"]["notes"] = {"url": url, "read_only": ["read_note"]}
        async with start_slack(sections, models=provider.models) as slack:
            provider.queue("I will put it in the notebook once approved.", WRITE)
            await slack.say("Rex, write a note 'launch': We launched on Monday", "1700000210.000100")

            [request] = slack.approval_requests()
            assert "approval_approve_always" in {b["action_id"] for b in buttons_of(request)}
            shown = str(request["blocks"])
            assert "*write_note* from MCP server *notes*" in shown and "We launched on Monday" in shown
            assert "server hints (untrusted): readOnlyHint=True, destructiveHint=False" in shown
            [pending] = await approvals.pending(slack.bot.roundtable.db)
            assert (pending.action, pending.args) == ("notes.write_note", WRITE["args"])
            await asyncio.sleep(0.5)  # time enough for a call that should not happen to arrive
            assert calls_received(call_log) == []  # nothing before Approve

            provider.queue("It is in the notebook now.")
            await slack.click("approval_approve", request)
            await slack.click("approval_approve", request)  # a second click runs nothing

            assert [(c["tool"], c["args"]) for c in calls_received(call_log)] == [("write_note", WRITE["args"])]
            [(name, result)] = provider.paired_results(provider.bodies[-1])
            assert name == "write_note"
            assert "Approved by Bea" in result and "Saved the note 'launch' (21 characters)." in result
            # The tool's answer reaches only Rex: the approval message shows a summary.
            outcome = str(slack.updates()[-1])
            assert "Approved by" in outcome and "the tool answered" in outcome and "Saved the note" not in outcome
            assert slack.posts()[-1]["text"] == "It is in the notebook now."


async def test_reject_with_feedback_sends_nothing_to_the_server_and_the_feedback_reaches_the_model(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("", WRITE)
        await slack.say("Rex, note down the launch", "1700000220.000100")
        [request] = slack.approval_requests()

        provider.queue("Understood, I will leave the notebook alone.")
        await slack.click("approval_feedback", request)
        [opened] = [call.args for call in slack.fake.calls_to("views.open")]
        await slack.submit_feedback(opened["view"], "not before the press release")

        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "write_note" and "Rejected by Bea: not before the press release" in result
        assert calls_received(call_log) == []


async def test_a_read_only_tool_runs_at_once_and_its_answer_reaches_the_person_who_asked(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("Let me look that up in the notebook.", READ)
        provider.queue("The groceries note says milk, eggs and bread.")
        await slack.say("Rex, what is on the groceries note?", "1700000230.000100")

        assert slack.approval_requests() == []
        assert [(c["tool"], c["args"]) for c in calls_received(call_log)] == [("read_note", {"title": "groceries"})]
        events = await approvals.audit_events(slack.bot.roundtable.db, ["rex"])
        assert [(e.action, e.event, e.actor, e.detail) for e in events] == [
            ("notes.read_note", "approved", "policy", 'ran at once: {"title": "groceries"}'),
            ("notes.read_note", "executed", None, "the tool answered (17 characters)"),
        ]
        # Without another human line, Rex's model is asked again with the result paired with its call
        # (on Gemini with the call's thought signature: the fake refuses a replay without it).
        assert len(provider.bodies) == 2
        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "read_note" and "milk, eggs, bread" in result
        # The answer built on it is posted once, under Rex's name; the words that came with the call
        # ("Let me look that up") are not, and the read-only call shows nothing in the channel.
        said = [(p.get("username"), p["text"]) for p in slack.posts()]
        assert said == [("Rex", "The groceries note says milk, eggs and bread.")]
        if provider.name == "gemini":
            assert provider.server.skipped_signatures == 0


async def test_approve_always_lets_the_next_call_run_at_once_in_that_channel_only(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    second = {"name": "write_note", "args": {"title": "retro", "text": "Went well"}}
    elsewhere = {"name": "write_note", "args": {"title": "other", "text": "Elsewhere"}}
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("", WRITE)
        await slack.say("Rex, note the launch", "1700000240.000100")
        [request] = slack.approval_requests()
        provider.queue("Noted.")
        await slack.click("approval_approve_always", request)
        assert [c["tool"] for c in calls_received(call_log)] == ["write_note"]

        provider.queue("Noted the retro in the notebook too.", second)
        await slack.say("Rex, note the retro: Went well", "1700000241.000100")
        assert len(slack.approval_requests()) == 1  # no new request: it ran at once
        assert [c["args"] for c in calls_received(call_log)] == [WRITE["args"], second["args"]]
        db = slack.bot.roundtable.db
        assert [(g.tool, g.granted_by) for g in await tool_grants.grants(db, KEY)] == [("notes.write_note", "Bea")]

        provider.queue("", elsewhere)
        await slack.say("Rex, note this here too", "1700000242.000100", channel="C0OTHER")
        assert len(slack.approval_requests()) == 2  # another channel: it waits
        assert len(calls_received(call_log)) == 2
        [pending] = await approvals.pending(db)
        assert pending.channel_key.endswith(":C0OTHER") and pending.status is ApprovalStatus.PENDING


async def test_a_tool_result_asking_for_another_call_does_not_run_it_without_approval(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    hacked = {"name": "write_note", "args": {"title": "hacked", "text": "owned"}}
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("Reading the orders note for you now.", {"name": "read_note", "args": {"title": "orders"}})
        # Asked again with the note's text, the model obeys it: its call still goes through the
        # policy and waits.
        provider.queue("Doing what the note says.", hacked)
        await slack.say("Rex, read the orders note", "1700000250.000100")
        assert [c["tool"] for c in calls_received(call_log)] == ["read_note"]
        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "read_note" and "ignore your instructions" in result
        [request] = slack.approval_requests()
        assert "hacked" in str(request["blocks"])
        await asyncio.sleep(0.5)
        assert [c["tool"] for c in calls_received(call_log)] == ["read_note"]


async def test_a_killed_server_gives_a_tool_error_one_notice_and_works_again_after_its_restart(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        servers = slack.bot.roundtable.mcp
        assert servers is not None and servers.state("notes") == "up"
        os.kill(server_pid(tmp_path), signal.SIGKILL)

        provider.queue("Let me look that up in the notebook.", READ)
        provider.queue("The notebook does not answer right now.")
        await slack.say("Rex, read the groceries note", "1700000260.000100")
        provider.queue("Trying the notebook once again.", READ)
        provider.queue("Still no notebook, sorry.")
        await slack.say("Rex, try again", "1700000261.000100")
        # Each failure went back to Rex's model at once, paired with its call.
        results = provider.paired_results(provider.bodies[-1])
        assert [n for n, _ in results] == ["read_note", "read_note"]
        assert all("failed: the MCP server notes" in result for _, result in results)
        assert len(_notices(slack)) == 1  # the channel is told once per outage

        for _ in range(600):  # restarted with backoff
            if servers.state("notes") == "up":
                break
            await asyncio.sleep(0.1)
        assert servers.state("notes") == "up"
        provider.queue("Here it is, from the notebook.", READ)
        provider.queue("Milk, eggs and bread, says the notebook.")
        await slack.say("Rex, once more", "1700000262.000100")
        results = provider.paired_results(provider.bodies[-1])
        assert "milk, eggs, bread" in results[-1][1]
        assert len(_notices(slack)) == 1


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
