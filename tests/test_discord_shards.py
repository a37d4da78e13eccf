"""Two real bot processes, one per Discord shard, on one PostgreSQL database, against the fake Discord.

The fake gateway sends each guild's events only to the connection holding its shard, as Discord does
((guild_id >> 22) % shard_count), so each guild is answered by exactly one process. The processes
share the database, so when the shards move (a process dies and another takes its shard over), an
approval requested through one process is decided, and its action run, through the other.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord

APPROVERS = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}}}
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}'
FIRST_GUILD_SHARD = p.shard_of(p.GUILD_ID, 2)  # #general and #news
SECOND_GUILD_SHARD = p.shard_of(p.SECOND_GUILD_ID, 2)  # #lobby


@dataclass
class Shards:
    fake: FakeDiscord
    database_url: str
    root: Path
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    async def start(self, name: str, shard_ids: list[int]) -> None:
        """`python -m bot` on Discord alone, holding `shard_ids` of 2; returns once they are connected."""
        directory = self.root / name
        directory.mkdir(exist_ok=True)
        discord = {
            "api_base_url": self.fake.api_url,
            "gateway_url": self.fake.gateway_url,
            "shard_count": 2,
            "shard_ids": shard_ids,
        }
        config = write_config(directory, {**APPROVERS, "discord": discord, "storage": {"url": self.database_url}})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GOOGLE_", "OPENAI_"))}
        with open(directory / "bot.log", "ab") as log:
            self.processes[name] = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "--config",
                str(config),
                cwd=REPO,
                env={**env, "DISCORD_TOKEN": self.fake.token},
                stdout=log,
                stderr=log,
            )
        await self.wait_for(lambda: set(shard_ids) <= self.fake.connected_shards(), timeout=60, name=name)

    async def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 30, name: str = "") -> None:
        async with asyncio.timeout(timeout):
            while not condition():
                for running, process in self.processes.items():
                    if process.returncode is not None and (not name or running == name):
                        log = (self.root / running / "bot.log").read_text()
                        raise AssertionError(f"{running} exited with {process.returncode}:\n{log[-3000:]}")
                await asyncio.sleep(0.05)

    def human_messages_routed(self) -> list[tuple[int, int]]:
        """(shard id, channel id) of every human MESSAGE_CREATE the fake gateway sent."""
        return [
            (shard, int(data["channel_id"]))
            for shard, event, data in self.fake.routed
            if event == "MESSAGE_CREATE" and data["author"]["id"] == str(p.HUMAN_USER_ID)
        ]

    def persona_posts_in(self, channel_id: int) -> list[str]:
        hooks = {str(i) for i, w in self.fake.webhooks.items() if w["channel_id"] == str(channel_id)}
        return [c.json["content"] for c in self.fake.webhook_executes() if c.path.split("/")[2] in hooks]


@pytest.fixture
async def shards(tmp_path: Path, postgres_server) -> AsyncIterator[Shards]:
    async with FakeDiscord(guild_ids=(p.GUILD_ID, p.SECOND_GUILD_ID)) as fake:
        started = Shards(fake, await postgres_server.new_database(), tmp_path)
        try:
            yield started
        finally:
            for process in started.processes.values():
                if process.returncode is None:
                    process.kill()
                    await process.wait()


async def test_two_processes_one_shard_each_answer_each_guild_once_and_share_approvals(shards: Shards) -> None:
    assert FIRST_GUILD_SHARD != SECOND_GUILD_SHARD
    await shards.start("lobby", [SECOND_GUILD_SHARD])
    await shards.start("general", [FIRST_GUILD_SHARD])
    identified = [payload["shard"] for payload in shards.fake.identify_payloads]
    assert sorted(identified) == [[0, 2], [1, 2]]  # each process connected only its own shard

    await shards.fake.send_message("Sage, how is #general?")
    await shards.fake.send_message("Sage, how is #lobby?", channel_id=p.SECOND_CHANNEL_ID)
    await shards.wait_for(lambda: bool(shards.persona_posts_in(p.TEXT_CHANNEL_ID)))
    await shards.wait_for(lambda: bool(shards.persona_posts_in(p.SECOND_CHANNEL_ID)))
    await asyncio.sleep(1.0)  # a second answer would arrive now
    [general] = shards.persona_posts_in(p.TEXT_CHANNEL_ID)
    [lobby] = shards.persona_posts_in(p.SECOND_CHANNEL_ID)
    assert "how is #general?" in general and "how is #lobby?" in lobby
    assert shards.human_messages_routed() == [
        (FIRST_GUILD_SHARD, p.TEXT_CHANNEL_ID),
        (SECOND_GUILD_SHARD, p.SECOND_CHANNEL_ID),
    ]

    # An approval requested through the process holding #general's shard ...
    await shards.fake.send_message(PUBLISH)
    await shards.fake.wait_for_calls(
        "POST", rf"/channels/{p.TEXT_CHANNEL_ID}/messages", where=lambda c: bool(c.json.get("components"))
    )
    [(message_id, message)] = [(i, m) for i, m in shards.fake.messages.items() if m["components"]]
    approve = message["components"][0]["components"][0]["custom_id"]
    assert approve.endswith(":approve")

    # ... which then stops: the other process takes its shard over, and the click goes there.
    await shards.stop("general")
    await shards.stop("lobby")
    await shards.start("lobby", [0, 1])
    click = await shards.fake.click_button(message_id, approve)
    edits = rf"/channels/{p.TEXT_CHANNEL_ID}/messages/{message_id}"
    await shards.fake.wait_for_calls("PATCH", edits, where=lambda c: "executed" in c.json.get("content", ""))
    await shards.wait_for(lambda: bool(shards.persona_posts_in(p.NEWS_CHANNEL_ID)))
    await asyncio.sleep(1.0)
    assert shards.persona_posts_in(p.NEWS_CHANNEL_ID) == ["We launched!"]
    [clicked_on] = [shard for shard, event, data in shards.fake.routed if data.get("id") == str(click)]
    assert clicked_on == FIRST_GUILD_SHARD  # the click reached the shard's new holder
    conn = await asyncpg.connect(shards.database_url)
    try:
        events = [row["event"] for row in await conn.fetch("SELECT event FROM audit_log ORDER BY id")]
    finally:
        await conn.close()
    assert events == ["requested", "approved", "executed"]
