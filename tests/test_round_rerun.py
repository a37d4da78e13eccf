"""A round cut by SIGKILL between two turns goes on from its last committed turn after the restart,
and a call a turn left waiting for a person is asked about after it:
on the fake Slack, with the OpenAI-compatible provider (langchain-openai on the fake Chat Completions
server). The fake model holds the second persona's call, so the kill surely lands after the first
turn was committed and posted and before the second one ended; nothing is timed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import aiohttp

from bot.slack.approval_blocks import APPROVE_ACTION
from tests.cluster import BotProcess, free_port
from tests.conftest import write_config
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import envelope, message, signed_headers
from tests.mcp_setup import calls_received, notes_environment, server_pid, stdio_sections

QUESTION = "Nova, then Sage and Rex: what do we ship first?"
REPLIES = ("The small fix goes out first.", "I would wait for the survey results.", "Release notes, then the fix.")


def persona_of(request_body: dict[str, Any]) -> str:
    """The persona a model call speaks for, by its system prompt ("You are Nova, ...")."""
    system = next(m["content"] for m in request_body["messages"] if m["role"] == "system")
    return str(system).split("You are ", 1)[1].split(",", 1)[0]


def persona_posts(fake: FakeSlackApi) -> list[str]:
    return [post["username"] for post in fake.delivered_posts() if post.get("username")]


def left_to_do(database: Path) -> int:
    """What the bot has still to do: messages waiting, rounds and actions running, posts not yet sent."""
    with sqlite3.connect(database) as db:
        return int(
            db.execute(
                "SELECT (SELECT COUNT(*) FROM inbox) + (SELECT COUNT(*) FROM running_rounds)"
                " + (SELECT COUNT(*) FROM approvals WHERE status = 'running')"
                " + (SELECT COUNT(*) FROM outbox WHERE status = 'waiting')"
            ).fetchone()[0]
        )


async def settled(database: Path, timeout: float = 120) -> None:
    """Wait until the restarted bot has finished its recovery: nothing waits, nothing runs, the outbox is
    drained. A second copy of anything the recovery did (a model call, a post, a request) is made
    before that, so what the servers received then is all they will receive."""
    deadline = time.monotonic() + timeout
    while left_to_do(database):
        assert time.monotonic() < deadline, "the bot never finished its recovery"
        await asyncio.sleep(0.05)


async def test_a_round_cut_by_sigkill_between_turns_goes_on_from_its_last_committed_turn(tmp_path: Path) -> None:
    async with FakeSlackApi() as slack, FakeOpenAI() as model:
        for reply in REPLIES:  # a reply of its own for each turn: the review never posts a copy
            model.queue(reply)
        port = free_port()
        llm = {"provider": "openai", "base_url": f"{model.url}/v1", "model": "fake-model", "backoff_seconds": 0.2}
        config = write_config(
            tmp_path, {"llm": llm, "slack": {"api_base_url": slack.api_url, "host": "127.0.0.1", "port": port}}
        )
        bot = BotProcess("bot", tmp_path, port, config)
        await model.let_through(1)  # Nova's call is answered; the next one (Sage's) waits
        await bot.start()
        try:
            body = json.dumps(envelope(message(QUESTION, "1700000500.000100"), "EvRerun1"))
            async with aiohttp.ClientSession() as http:
                async with http.post(
                    bot.url, data=body.encode(), headers=signed_headers(body, "application/json")
                ) as r:
                    assert r.status == 200
            await slack.wait_until(lambda: persona_posts(slack) == ["Nova"], timeout=120)  # committed and posted
            await model.wait_for_requests(2, timeout=120)  # Sage's turn is under way
            assert persona_of(model.requests[1].body) == "Sage"
        finally:
            await bot.kill()
        with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
            running = db.execute("SELECT COUNT(*) FROM running_rounds").fetchone()[0]
        assert running == 1  # the round was cut, not finished

        await bot.start()
        await model.let_through(None)  # Sage's cut call, its client gone, takes no answer
        try:
            await slack.wait_until(lambda: len(persona_posts(slack)) >= 3, timeout=120)
            await settled(tmp_path / "data" / "roundtable.sqlite3")
        finally:
            await bot.stop()

    # Nova is not asked again nor posted twice; Sage's cut call is made again, then Rex's.
    assert [persona_of(r.body) for r in model.requests] == ["Nova", "Sage", "Sage", "Rex"]
    assert persona_posts(slack) == ["Nova", "Sage", "Rex"]
    assert [post["text"] for post in slack.delivered_posts()] == list(REPLIES)
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        spoken = [row[0] for row in db.execute("SELECT author_id FROM lines WHERE kind = 'persona' ORDER BY id")]
        left = db.execute("SELECT (SELECT COUNT(*) FROM inbox) + (SELECT COUNT(*) FROM running_rounds)").fetchone()
    assert spoken == ["nova", "sage", "rex"]
    assert left[0] == 0  # nothing waits: the message was answered once


async def test_a_call_waiting_for_approval_is_asked_about_after_a_sigkill_during_its_turn(tmp_path: Path) -> None:
    """Rex calls two tools at once: write_note runs at once (read-only here; the server holds its
    answer 60 s), delete_note waits for a person. The kill lands while write_note runs: the waiting
    call was stored with Rex's words and their post, so after the restart its approval request goes
    out once, and people have seen the words Rex remembers saying, once."""
    with notes_environment(tmp_path, write_delay=60) as log:
        os.environ["NOTES_DELETE"] = "1"  # the notes server offers delete_note (restored by notes_environment)
        async with FakeSlackApi() as slack, FakeOpenAI() as model:
            calls = [
                {"name": "write_note", "args": {"title": "launch", "text": "We launched"}},
                {"name": "delete_note", "args": {"title": "draft"}},
            ]
            model.queue("Writing the launch note and asking to delete the draft.", calls)
            port = free_port()
            llm = {"provider": "openai", "base_url": f"{model.url}/v1", "model": "fake-model", "backoff_seconds": 0.2}
            slack_section = {"api_base_url": slack.api_url, "host": "127.0.0.1", "port": port}
            sections = stdio_sections(tmp_path, read_only=["read_note", "write_note"])
            config = write_config(tmp_path, {"llm": llm, "slack": slack_section, **sections})
            bot = BotProcess("bot", tmp_path, port, config)
            await bot.start()
            try:
                body = json.dumps(
                    envelope(message("Rex, note the launch and delete the draft.", "1700000600.000100"), "EvHeld1")
                )
                async with aiohttp.ClientSession() as http:
                    async with http.post(
                        bot.url, data=body.encode(), headers=signed_headers(body, "application/json")
                    ) as r:
                        assert r.status == 200
                deadline = time.monotonic() + 120
                while not calls_received(log):  # write_note is running on the server
                    assert time.monotonic() < deadline, "the server never received write_note"
                    await asyncio.sleep(0.05)
                orphan = server_pid(tmp_path)
            finally:
                await bot.kill()
            os.killpg(orphan, signal.SIGKILL)
            assert not approval_requests(slack)

            await bot.start()
            try:
                await slack.wait_until(lambda: len(approval_requests(slack)) >= 1, timeout=120)
                await settled(tmp_path / "data" / "roundtable.sqlite3")
            finally:
                await bot.stop()
    assert [c["tool"] for c in calls_received(log)] == ["write_note"]  # nothing ran again by itself
    assert len(approval_requests(slack)) == 1
    said = [post for post in slack.delivered_posts() if "Writing the launch note" in str(post.get("text"))]
    assert len(said) == 1
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        asked = db.execute("SELECT action, status FROM approvals ORDER BY id").fetchall()
    assert sorted(asked) == [("notes.delete_note", "pending"), ("notes.write_note", "unknown")]


def approval_requests(fake: FakeSlackApi) -> list[dict[str, Any]]:
    """The approval requests posted: a message with an Approve button."""
    return [post for post in fake.delivered_posts() if f'"{APPROVE_ACTION}"' in json.dumps(post.get("blocks") or "")]
