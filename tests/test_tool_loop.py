"""A persona turn is a loop: model call -> tool calls -> the same persona's model again with the
results, until it answers without a tool call or reaches [actions] max_steps. On the wire: the real
Slack app on the fake Slack Web API, the real Gemini and OpenAI SDKs on their fakes, the real notes
MCP server over stdio, and the console as a person runs it (`python -m bot console`)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from bot.inbound import Inbound
from storage import approvals, channels, history, tool_grants
from storage.records import ApprovalMode
from tests.conftest import run_console, write_config
from tests.fakes.providers import PROVIDERS, fake_provider
from tests.interactive_console import InteractiveConsole
from tests.mcp_setup import calls_received, has_exited, notes_environment, server_pid, stdio_sections, wait_until
from tests.slack_harness import KEY, StartSlack
from tests.test_actions_wire import Provider

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

READ = {"name": "read_note", "args": {"title": "groceries"}}
WRITE = {"name": "write_note", "args": {"title": "retro", "text": "Went well"}}
CONSOLE = "console:loop"
LAUNCH = {"name": "publish_post", "args": {"channel": "news", "text": "We launched!"}}


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Happy to help with that, tell me more.") as (server, models):
        yield Provider(request.param, server, models)


@pytest.fixture
def call_log(tmp_path: Path) -> Iterator[Path]:
    with notes_environment(tmp_path) as log:
        yield log


def _limits() -> float:
    return REGISTRY.get_sample_value("roundtable_tool_step_limits_total") or 0.0


async def test_a_model_that_keeps_calling_tools_stops_after_max_steps_and_the_bot_keeps_answering(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        # Four model calls, each asking for the tool again: the fourth's call is not run.
        for _ in range(4):
            provider.queue("", READ)
        before = _limits()
        await slack.say("Rex, what is on the groceries note?", "1700000300.000100")
        assert len(provider.bodies) == 4
        assert len(calls_received(call_log)) == 3
        assert [p["text"] for p in slack.posts()] == ["Rex stopped after 4 tool steps."]
        assert _limits() == before + 1  # counted on /metrics

        # With words on the way, the persona's last words are posted instead of the notice.
        provider.queue("Checking the notebook first.", READ)
        for _ in range(3):
            provider.queue("", READ)
        await slack.say("Rex, check the groceries note again", "1700000301.000100")
        assert len(provider.bodies) == 8
        assert [p["text"] for p in slack.posts()][-1] == "Checking the notebook first."

        provider.queue("Still here, and still counting missed deadlines.")
        await slack.say("Rex, are you still there?", "1700000302.000100")
        assert slack.posts()[-1]["username"] == "Rex"
        assert slack.posts()[-1]["text"] == "Still here, and still counting missed deadlines."


async def test_a_short_answer_relaying_a_tools_result_is_posted_as_it_is(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    """ "Milk and eggs." is under the review's shortest line, but after the tool answered it is the
    answer: asked again, a small model had written a question instead and lost the fact."""
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("", READ)
        provider.queue("Milk and eggs.")
        await slack.say("Rex, what is on the groceries note?", "1700000305.000100")
        assert len(provider.bodies) == 2
        assert [(p.get("username"), p["text"]) for p in slack.posts()] == [("Rex", "Milk and eggs.")]


async def test_a_short_reply_after_a_tool_that_passes_nothing_on_is_written_again(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("", READ)
        provider.queue("What?")
        provider.queue("The groceries note says milk, eggs, bread.")
        await slack.say("Rex, what is on the groceries note?", "1700000306.000100")
        assert len(provider.bodies) == 3
        assert [p["text"] for p in slack.posts()] == ["The groceries note says milk, eggs, bread."]


async def test_a_budget_reached_between_steps_ends_the_loop_with_the_budgets_notice(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    sections = {**stdio_sections(tmp_path), "limits": {"channel_tokens_per_day": 1}}
    async with start_slack(sections, models=provider.models) as slack:
        provider.queue("", READ)
        provider.queue("Never asked: the budget is spent.")
        await slack.say("Rex, what is on the groceries note?", "1700000305.000100")
        assert len(provider.bodies) == 1  # the first step's call counted, and spent the day's budget
        assert [c["tool"] for c in calls_received(call_log)] == ["read_note"]
        [notice] = [p["text"] for p in slack.posts()]
        assert notice.startswith("This channel has used its 1 model tokens for today.")


async def test_an_on_the_loop_action_follows_the_same_loop(
    start_slack: StartSlack, provider: Provider, tmp_path: Path
) -> None:
    async with start_slack({}, models=provider.models) as slack:
        db = slack.bot.roundtable.db
        await channels.ensure_channel(db, KEY, participants=["nova", "sage", "rex"], moderated=False)
        await channels.set_approval_mode(db, KEY, ApprovalMode.ON_THE_LOOP)
        provider.queue("", LAUNCH)
        provider.queue("It is up in #news for everyone to see.")
        await slack.say("Nova, publish 'We launched!' in #news", "1700000310.000100")

        assert slack.approval_requests() == []
        assert [p["text"] for p in slack.posts_to("news")] == ["We launched!"]
        assert len(provider.bodies) == 2
        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "publish_post" and "executed: posted in #news" in result
        # On the loop, the channel is told what ran; Nova's answer follows, once.
        said = [(p.get("username"), p["text"]) for p in slack.posts_to(KEY.rsplit(":", 1)[1])]
        assert said[0][1].startswith("Nova ran publish_post(channel='news', text='We launched!')")
        assert said[1:] == [("Nova", "It is up in #news for everyone to see.")]


async def test_an_approved_always_tool_follows_the_same_loop(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        await tool_grants.grant(slack.bot.roundtable.db, KEY, "notes.write_note", "Bea")
        provider.queue("", WRITE)
        provider.queue("The retro is in the notebook now.")
        await slack.say("Rex, note the retro: Went well", "1700000320.000100")

        assert slack.approval_requests() == []
        assert [(c["tool"], c["args"]) for c in calls_received(call_log)] == [("write_note", WRITE["args"])]
        [(name, result)] = provider.paired_results(provider.bodies[-1])
        assert name == "write_note" and "Saved the note 'retro'" in result
        assert [(p.get("username"), p["text"]) for p in slack.posts()] == [("Rex", "The retro is in the notebook now.")]


async def test_an_approvals_follow_up_continues_the_loop(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path), models=provider.models) as slack:
        provider.queue("", WRITE)
        await slack.say("Rex, note the retro: Went well", "1700000330.000100")
        [request] = slack.approval_requests()

        # After Approve, the follow-up reads a note at once and is asked again with its result.
        provider.queue("", READ)
        provider.queue("Saved, and the groceries note still says milk, eggs and bread.")
        await slack.click("approval_approve", request)

        assert [c["tool"] for c in calls_received(call_log)] == ["write_note", "read_note"]
        names = [name for name, _ in provider.paired_results(provider.bodies[-1])]
        assert names == ["write_note", "read_note"]
        assert slack.posts()[-1]["text"] == "Saved, and the groceries note still says milk, eggs and bread."


async def test_announce_immediate_says_in_the_channel_what_ran_at_once(
    start_slack: StartSlack, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    sections = {**stdio_sections(tmp_path), "actions": {"announce_immediate": True}}
    async with start_slack(sections, models=provider.models) as slack:
        provider.queue("", READ)
        provider.queue("Milk, eggs and bread.")
        await slack.say("Rex, what is on the groceries note?", "1700000340.000100")
        texts = [p["text"] for p in slack.posts()]
        assert texts[0].startswith("Rex ran notes.read_note(title='groceries')")
        assert texts[-1] == "Milk, eggs and bread."


def test_the_console_prints_what_ran_at_once(tmp_path: Path) -> None:
    with notes_environment(tmp_path):
        config = write_config(tmp_path, stdio_sections(tmp_path))
        out = run_console(config, 'Rex, read it. !!act read_note {"title": "groceries"}\n')
    assert "[action 1] ran: notes.read_note(title='groceries')" in out
    assert out.count("[Rex]") == 1  # one answer, after the result


@pytest.mark.parametrize(
    "script",
    [
        '/moderate on\nRex, read it. !!act read_note {"title": "groceries"}\n',
        '/task Review the risks in the groceries note !!act read_note {"title": "groceries"}\n',
    ],
    ids=["moderated round", "task step"],
)
def test_a_moderated_round_and_a_task_step_follow_the_same_loop(tmp_path: Path, script: str) -> None:
    with notes_environment(tmp_path) as log:
        config = write_config(tmp_path, stdio_sections(tmp_path))
        lines = run_console(config, script).splitlines()
        assert [c["tool"] for c in calls_received(log)] == ["read_note"]
    ran = lines.index("[action 1] ran: notes.read_note(title='groceries')")
    assert not any(line.startswith("[Rex]") for line in lines[:ran])  # nothing said before the result
    # Then Rex answers, once (a task's answer, which Rex writes after his step, is no answer to the call).
    answers = [line for line in lines[ran:] if line.startswith("[Rex]") and "give me the task's answer" not in line]
    assert len(answers) == 1


def test_sigkill_after_an_immediate_action_ran_leaves_an_unknown_outcome_never_run_again(tmp_path: Path) -> None:
    # write_note is read-only in this config, so it runs at once; the server holds its answer 60 s.
    with notes_environment(tmp_path, write_delay=60) as log:
        config = write_config(tmp_path, stdio_sections(tmp_path, read_only=["read_note", "write_note"]))
        console = InteractiveConsole(config)
        console.type('Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}')
        wait_until(lambda: len(calls_received(log)) == 1, 120, "the server to receive the call")
        orphan = server_pid(tmp_path)
        console.kill()  # it ran (the server has it), and its result is not committed
        try:
            out = run_console(config, "/approvals\n")
        finally:
            try:
                import os

                os.killpg(orphan, 9)
            except (ProcessLookupError, PermissionError):
                pass
        # The restarted console has exited, and the last notes server it started has too: a call run
        # again by its recovery was logged by then (the server logs a call before it answers).
        wait_until(lambda: has_exited(server_pid(tmp_path)) and has_exited(orphan), 60, "the notes servers to exit")
        assert [c["tool"] for c in calls_received(log)] == ["write_note"]  # never run again by itself
        assert "Outcome unknown" in out and "Rex ran notes.write_note(title='launch', text='We launched')" in out
        with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
            assert db.execute("SELECT status FROM approvals").fetchall() == [("unknown",)]
            audit = db.execute("SELECT event, actor, detail FROM audit_log ORDER BY id").fetchall()
        assert audit[0] == ("approved", "policy", 'ran at once: {"title": "launch", "text": "We launched"}')
        why = "an MCP tool's effect cannot be looked up"
        assert audit[-1] == ("failed", None, f"{approvals.UNKNOWN_RESULT} ({why})")


async def test_on_the_embedded_model_a_read_only_tool_runs_unasked_and_rex_answers_once_after_it(
    open_test_app, port, local_models, tmp_path: Path, call_log: Path
) -> None:
    """The embedded Gemma's action step, the real notes server over stdio. Whatever the model chooses:
    only the read-only tool reaches the server unasked, each call's result is stored before the answer
    written after it, and Rex's turn ends in one reviewed post or a skip notice. Whether Gemma picks
    read_note for this line is bench/mcp_tools.py's figure."""
    async with open_test_app(stdio_sections(tmp_path), models=local_models) as app:
        await app.service.handle(Inbound(CONSOLE, "u1", "Ana", "Rex, read the note 'standup'", event_id="e1"))
        await app.service.wait_idle(CONSOLE)
        lines = list(reversed(await history.recent_lines_for(app.db, CONSOLE, "rex", limit=10)))
    calls = calls_received(call_log)
    assert all(call["tool"] == "read_note" for call in calls)  # write_note would wait for approval
    results = [line for line in lines if line.call_id is not None]
    assert len(results) >= len(calls)  # every call that ran has its stored result
    if port.approvals_shown:  # a proposal that waits ends the turn there
        assert not port.posts
        return
    posted = [(persona, text) for _, persona, text, _ in port.posts]
    if posted:
        assert posted == [("rex", lines[-1].text)] and lines[-1].author_id == "rex"
    else:
        assert any(text == "[system] Rex has no answer to that right now." for _, _, text in port.events)
    if calls and posted:  # Rex's answer was written by a model step that saw the result
        assert lines.index(results[-1]) < len(lines) - 1
