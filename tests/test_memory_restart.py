"""A summary update cut by SIGKILL leaves the previous summary, and runs again once after the restart.

The console runs for real. The history is written first with the scripted double (summaries on, then
off, so lines wait to be folded in); then the bot runs on the OpenAI-compatible provider
(langchain-openai on the fake Chat Completions server), which holds the first summary request of the
start-up's catch-up: the kill surely lands while an update is under way, before it stored anything.
What the model adds names nothing from before: it is appended to the summary so far, and the two
are shortened by the model together. Nothing is timed."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from graph.memory import LINES_OPENING, MEMORY_OPENING
from tests.conftest import REPO, run_console, write_config
from tests.fakes.openai_server import FakeOpenAI

SUMMARY_REQUEST = "memory of a group chat"  # graph/memory.py's fold prompt
# What the model adds from the lines leaving the window; the summary so far is kept word for word beside it,
# and as the two outgrow the bound (50 tokens after the restart) the model is asked to shorten them.
ADDED = (
    "Then a long run of mild weather. The wind stayed low and the sea calm for days. "
    "Nobody said anything new about the pier. The harbour office stayed closed all week."
)  # within the bound on its own, beyond it with the summary so far
FOLDED = json.dumps({"facts": ADDED.split(". ")})
SHORTENED = '{"summary": "I recall the boat Marigold, then a long run of mild weather."}'


def summaries(data: Path) -> dict[str, tuple[str, int]]:
    with sqlite3.connect(data / "roundtable.sqlite3") as db:
        rows = db.execute("SELECT persona_id, summary, covers_through_line_id FROM persona_summaries").fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def is_summary_request(body: dict[str, Any]) -> bool:
    return SUMMARY_REQUEST in str(body["messages"][0]["content"])


def persona_of(body: dict[str, Any]) -> str:
    """Whose memory a summary request folds: "You keep Sage's memory ..."."""
    return str(body["messages"][0]["content"]).split("You keep ", 1)[1].split("'s memory", 1)[0]


async def console(config: Path, script: str) -> asyncio.subprocess.Process:
    path = config.parent / "script.txt"
    path.write_text(script, encoding="utf-8")
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake"}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "console",
        "--config",
        str(config),
        "--script",
        str(path),
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def test_a_summary_update_cut_by_sigkill_leaves_the_old_summary_and_runs_again_once(tmp_path: Path) -> None:
    history = {"token_budget": 1200}
    config = write_config(tmp_path, {"history": history})
    run_console(config, "The boat is called Marigold.\n" + "".join(f"Line {n}: mild.\n" for n in range(2, 70)))
    before = summaries(tmp_path / "data")
    assert set(before) == {"nova", "sage", "rex"} and "Marigold" in before["sage"][0]
    write_config(tmp_path, {"history": history, "memory": {"summaries": False}})
    run_console(config, "".join(f"Later line {n}: still mild.\n" for n in range(20)))  # waits to be folded in
    assert summaries(tmp_path / "data") == before

    async with FakeOpenAI() as model:
        llm = {"provider": "openai", "base_url": f"{model.url}/v1", "model": "fake-model", "backoff_seconds": 0.2}
        # A bound the summary so far and the addition outgrow together: the model is asked to shorten them.
        write_config(tmp_path, {"history": history, "llm": llm, "memory": {"summary_tokens": 50}})
        await model.let_through(0)  # the first summary request waits
        bot = await console(config, "/memory sage\n")  # no round: start-up's catch-up folds what waits
        try:
            await model.wait_for_requests(1, timeout=120)
            assert is_summary_request(model.requests[0].body)
        finally:
            bot.kill()  # SIGKILL
            await bot.wait()
        assert summaries(tmp_path / "data") == before  # nothing stored, nothing half-stored

        cut = len(model.requests)
        for _ in range(3):  # one persona after another: its fold, then its shortening
            model.queue(FOLDED)
            model.queue(SHORTENED)
        await model.let_through(None)
        restarted = await console(config, "/memory sage\n")  # no round: only start-up's catch-up folds
        assert await asyncio.wait_for(restarted.wait(), 120) == 0
        again = [r.body for r in model.requests[cut:]]

        after_restart = summaries(tmp_path / "data")
        second = await console(config, "/memory sage\n")
        assert await asyncio.wait_for(second.wait(), 120) == 0
        once = len(model.requests)

    assert all(is_summary_request(body) for body in again)
    folds = [body for body in again if LINES_OPENING in str(body["messages"][-1]["content"])]
    shortenings = [str(body["messages"][-1]["content"]) for body in again if body not in folds]
    assert sorted(persona_of(body) for body in folds) == ["Nova", "Rex", "Sage"]  # once each
    assert len(shortenings) == 3
    for persona in ("nova", "sage", "rex"):  # what is shortened: the summary so far, word for word, and the addition
        assert f"{MEMORY_OPENING}\n{before[persona][0]} {ADDED}" in shortenings
    assert once == cut + len(again)  # a second start finds nothing left to fold
    for persona in ("nova", "sage", "rex"):
        text, through = after_restart[persona]
        assert text == "I recall the boat Marigold, then a long run of mild weather."
        assert through > before[persona][1]
