"""An approved action's Discord post cut short by a SIGKILL is found or finished after the restart,
never lost and never doubled: the real bot (`python -m bot`, Discord only) against the fake Discord
REST and gateway, which kills the process the moment the action's webhook execute reaches it, before
or after the message is created. Nothing is timed: the kill is a condition of the wire."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import KillOn

ACTIONS = {
    "publish_post": {"channel": "news", "text": "We launched!"},
    "send_message": {"to": "#news", "text": "We launched!"},
}
PIDS: list[int] = []


def asking(action: str) -> str:
    return f"Nova, do it. !!act {action} {json.dumps(ACTIONS[action])}"


async def until(condition: Callable[[], bool], timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


@asynccontextmanager
async def bot_process(tmp_path: Path, fake: FakeDiscord) -> AsyncIterator[asyncio.subprocess.Process]:
    """The bot in a process of its own, connected to the fake; killed (or already dead) at the end."""
    sections = {
        "discord": {"api_base_url": fake.api_url, "gateway_url": fake.gateway_url},
        "approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}},
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "GOOGLE_", "OPENAI_"))}
    env["DISCORD_TOKEN"] = fake.token
    connections = fake.guilds_sent + 1
    with open(tmp_path / "bot.log", "ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "--config", str(write_config(tmp_path, sections)), "run",
            cwd=REPO, env=env, stdout=log, stderr=log,
        )  # fmt: skip
    try:
        await until(lambda: fake.guilds_sent >= connections or process.returncode is not None, timeout=120)
        assert process.returncode is None, f"the bot exited: see {tmp_path}/bot.log"
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


def statuses(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT status FROM approvals ORDER BY id")]


def requests(fake: FakeDiscord) -> list[int]:
    """The message ids of the approval requests the bot posted, oldest first."""
    return sorted(i for i, m in fake.messages.items() if any("approve" in c.get("custom_id", "") for c in buttons(m)))


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in message.get("components") or [] for c in row.get("components", [])]


async def approve(fake: FakeDiscord, message_id: int) -> None:
    [approve_id] = [c["custom_id"] for c in buttons(fake.messages[message_id]) if c["custom_id"].endswith(":approve")]
    await fake.click_button(message_id, approve_id)


def launches(fake: FakeDiscord) -> int:
    """How many of the action's posts Discord holds in #news."""
    news = str(p.NEWS_CHANNEL_ID)
    return sum(1 for m in fake.history if m["channel_id"] == news and m["content"] == "We launched!")


def the_post(body: dict[str, Any]) -> bool:
    return body.get("content") == "We launched!" and body.get("username") == "Nova"


def last_audit(tmp_path: Path) -> tuple[str, str, str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        row = db.execute("SELECT event, actor, detail FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
    return (row[0], row[1], row[2])


@pytest.mark.parametrize("action", ["publish_post", "send_message"])
@pytest.mark.parametrize("posted", [False, True], ids=["killed before the post", "killed after the post"])
async def test_an_approved_discord_post_cut_by_a_kill_exists_once_and_is_executed_after_the_restart(
    tmp_path: Path, action: str, posted: bool
) -> None:
    async with FakeDiscord() as fake:
        fake.someone_says(p.NEWS_CHANNEL_ID, "We launched!")  # the same words said before: not the post
        async with bot_process(tmp_path, fake) as bot:
            await fake.send_message(asking(action))
            await until(lambda: len(requests(fake)) == 1)
            fake.kill_on = KillOn("execute", the_post, bot.pid, after_doing=posted)
            await approve(fake, requests(fake)[0])
            await until(lambda: fake.killed == 1)
            await bot.wait()
        assert statuses(tmp_path) == ["running"]  # claimed, its outcome never recorded
        assert launches(fake) == 1 + (1 if posted else 0)

        async with bot_process(tmp_path, fake):
            await until(lambda: statuses(tmp_path) != ["running"])
    assert statuses(tmp_path) == ["executed"]
    assert launches(fake) == 2  # the person's line, and the post once
    way = "found already posted, not posted again" if posted else "not posted before the stop, posted now"
    assert last_audit(tmp_path) == ("executed", "start-up recovery", f"posted in #news (after the restart: {way})")


@pytest.mark.parametrize("action", ["publish_post", "send_message"])
async def test_two_approved_discord_posts_with_the_same_text_are_each_posted_once(tmp_path: Path, action: str) -> None:
    async with FakeDiscord() as fake:
        async with bot_process(tmp_path, fake) as bot:
            await fake.send_message(asking(action))
            await until(lambda: len(requests(fake)) == 1)
            await approve(fake, requests(fake)[0])
            await until(lambda: statuses(tmp_path) == ["executed"])
            first = requests(fake)
            await fake.send_message(asking(action))
            await until(lambda: requests(fake) not in ([], first))  # the second request (the first has no buttons)
            fake.kill_on = KillOn("execute", the_post, bot.pid, after_doing=True)
            await approve(fake, requests(fake)[0])
            await until(lambda: fake.killed == 1)
            await bot.wait()
        assert statuses(tmp_path) == ["executed", "running"]
        assert launches(fake) == 2

        async with bot_process(tmp_path, fake):
            await until(lambda: statuses(tmp_path) != ["executed", "running"])
    assert statuses(tmp_path) == ["executed", "executed"]
    assert launches(fake) == 2  # the same words twice, each approval's post once
