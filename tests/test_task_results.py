"""Tasks that deliver a result, in the real console bot and on the fake Slack and Discord (scripted
model): a dependent step gets its predecessor's whole result, the task's last message is its
integrated answer and /task result posts it again, a rejected optional step is skipped and a
rejected required one fails the task, and a stop during the integration turn posts no second answer."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.inbound import Inbound
from bot.slack.text import unescape_from_slack
from graph.models.scripted import ScriptedModels
from personas import Persona
from storage import task_artifacts, tasks
from tests.conftest import run_bot, run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import CHANNEL
from tests.recording_port import RecordingPort
from tests.slack_harness import SlackHarness
from tests.test_task_steering import spoken
from tests.test_task_steering_platforms import command, discord_speakers, slack_speakers
from tests.test_tasks import plan_blocks

ACT = '!!act publish_post {"channel": "news", "text": "We launched!"}'


def artifacts(tmp_path: Path) -> dict[int, str]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        return dict(db.execute("SELECT step_id, text FROM task_artifacts WHERE task_id = 1").fetchall())


def three_steps(optional_first: bool) -> str:
    """Nova announces (her action waits for approval), Rex reviews it, Sage researches on his own."""
    steps = [
        ("Announce the launch", "announcements", [], optional_first),
        ("Review the announcement", "review", [1], False),
        ("Research the reactions", "research", [], False),
    ]
    return json.dumps(
        {
            "title": "Launch",
            "steps": [
                {"id": i, "title": t, "instruction": t, "capability": c, "depends_on": d, "optional": o}
                for i, (t, c, d, o) in enumerate(steps, start=1)
            ],
        },
        separators=(",", ":"),
    )


def test_a_dependent_step_gets_the_whole_result_and_the_task_ends_with_its_answer(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    transcript = run_console(
        config, f"/task Announce the launch; review it {ACT}\n/approve 1\n/task status\n/task result\n"
    )
    kept = artifacts(tmp_path)
    # Nova's whole reply, then what her action did: far more than the plan's 100-character summary.
    nova = next(line for line in transcript.splitlines() if line.startswith("[Nova] "))
    assert kept[1] == f"{nova.removeprefix('[Nova] ')}\n(publish_post: Approved by you, executed: posted in #news)"
    assert len(kept[1]) > 100
    prompt = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", "rex").stdout
    assert f"Results so far: step 1 (Nova): {kept[1]}. you: Rex, review it." in prompt  # whole, in his step's note

    finished, asked = transcript.split("[you] /task status", 1)
    answer = kept[0]  # the integrator's reply: Rex did the later of two single steps
    posts = [line for line in finished.splitlines() if line.startswith(("[Nova] ", "[Rex] ", "[system] "))]
    assert posts[-1] == f"[Rex] {answer}"  # the last message; only the plan's final edit follows
    assert "you: Rex, give me the task's answer" in answer
    assert "Task #1: Done" not in finished  # the answer takes the place of the "Done" notice
    assert plan_blocks(finished)[-1][-1] == "Done: all 2 steps completed."
    status, result = asked.split("[you] /task result", 1)
    assert f"[system] Task #1's answer (Rex): {answer}" in status.splitlines()
    assert result.strip() == f"[system] Task #1's answer (Rex): {answer}"  # posted again, once
    assert "give me the task's answer" in prompt  # Rex was asked privately, with every result
    assert f"- step 1, Announce the launch (Nova): {kept[1]}" in prompt


def test_a_rejected_optional_step_is_skipped_and_a_rejected_required_step_fails_the_task(tmp_path: Path) -> None:
    transcript = run_console(
        write_config(tmp_path),
        f"/task Launch with an optional post !!plan {three_steps(optional_first=True)} {ACT}\n"
        "/reject 1 not today\n"
        f"/task Launch with a required post !!plan {three_steps(optional_first=False)} {ACT}\n"
        "/reject 2 not today\n",
    )
    optional, required = transcript.split("[you] /task Launch with a required post", 1)
    final = plan_blocks(optional)[-1]
    assert final == [
        "Task #1: Launch (completed)",
        "[~] 1. Announce the launch — Nova: skipped (optional): approval #1: publish_post: Rejected by you: not today",
        final[2],
        final[3],
        "Done: 2 of 3 steps completed, 1 optional skipped.",
    ]
    assert final[2].startswith("[x] 2. Review the announcement — Rex (after 1): ")  # it ran after the skip
    assert final[3].startswith("[x] 3. Research the reactions — Sage: ")
    after_rejection = spoken(optional.split("[you] /reject 1", 1)[1])
    assert after_rejection.index("Rex") < after_rejection.index("Sage")  # the steps after it ran, in order

    stopped = plan_blocks(required)[-1]
    assert stopped[:4] == [
        "Task #2: Launch (failed)",
        "[!] 1. Announce the launch — Nova: approval #2: publish_post: Rejected by you: not today",
        "[-] 2. Review the announcement — Rex (after 1): step 1 did not finish",
        stopped[3],
    ]
    assert stopped[3].startswith("[x] 3. Research the reactions — Sage: ")  # it ran while step 1 waited
    note = (
        "Stopped: required step 1 was rejected (approval #2: publish_post: Rejected by you: not today)."
        " 1 of 3 steps completed, 1 failed, 1 blocked."
    )
    assert stopped[4] == note
    assert f"[system] Task #2: {note}" in required
    after_rejection = required.split("[you] /reject 2", 1)[1]
    assert "[Rex]" not in after_rejection  # no step ran after it (Sage, who did step 3, writes the answer)


async def test_slack_the_last_message_is_the_answer_and_task_result_posts_it_again(slack: SlackHarness) -> None:
    await slack.command("/task", "Research venues; write the invite")
    posts = slack.posts_to(CHANNEL)
    assert slack_speakers(slack) == ["Sage", "Nova", "Nova"]  # two steps, then Nova's answer
    answer = unescape_from_slack(posts[-1]["text"])
    assert posts[-1]["username"] == "Nova" and "Nova, give me the task's answer" in answer
    assert not any("Task #1: Done" in post["text"] for post in posts)

    await slack.command("/task", "result")
    again = slack.posts_to(CHANNEL)[-1]
    assert unescape_from_slack(again["text"]) == f"Task #1's answer (Nova): {answer}"
    await slack.command("/task", "status")
    status = unescape_from_slack(slack.replies_to_command()[-1]["text"]).splitlines()
    assert status[0] == "Task #1: Research venues (completed)"
    assert status[-1] == f"Task #1's answer (Nova): {answer}"


async def test_discord_the_last_message_is_the_answer_and_task_result_posts_it_again(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot() as bot:
        await command(fake, bot, "Research venues; write the invite")
        assert discord_speakers(fake) == ["Sage", "Nova", "Nova"]
        last = [c.json for c in fake.webhook_executes()][-1]
        assert last["username"] == "Nova" and "Nova, give me the task's answer" in last["content"]
        result = await command(fake, bot, "result")
        await settle(bot)
    assert result["content"] == f"Task #1's answer (Nova): {last['content']}"
    channel = [m for m in fake.messages.values() if m["channel_id"] == str(p.TEXT_CHANNEL_ID)]
    assert channel[-1]["content"] == f"Task #1's answer (Nova): {last['content']}"


class SecondPostHangs(RecordingPort):
    """A port whose second post of `persona` (in a two-step task, the answer after her step) is
    recorded (the platform has it) and then never returns, so a stop cuts the integration turn short."""

    def __init__(self, persona: str) -> None:
        super().__init__()
        self.persona = persona
        self.seen = 0
        self.hanging = asyncio.Event()

    async def post(self, channel_key: str, persona: Persona, text: str, thread: str | None) -> None:
        await super().post(channel_key, persona, text, thread)
        if persona.id == self.persona and not self.hanging.is_set():
            self.seen += 1
            if self.seen == 2:
                self.hanging.set()
                await asyncio.Event().wait()


async def test_a_stop_during_the_integration_turn_does_not_post_the_answer_twice(open_test_app) -> None:
    key = "console:general"
    port = SecondPostHangs("nova")
    async with open_test_app(models=ScriptedModels(), outbound=port) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "/task Research venues; write the invite"))
        await asyncio.wait_for(port.hanging.wait(), 60)
        await app.service.drain(0)  # stopped inside the integration turn, after the answer was posted
        task = await tasks.latest(app.db, key)
    assert task is not None and task.status == "running"  # its end is not stored before its answer

    async with open_test_app(models=ScriptedModels(), outbound=port) as app:
        await app.service.wait_idle()
        task = await tasks.latest(app.db, key)
        assert task is not None and task.status == "completed"
        answer = await task_artifacts.answer(app.db, task.id)
    assert [post[1] for post in port.posts] == ["sage", "nova", "nova"]  # the answer was posted once
    assert answer is not None and answer.author_id == "nova" and answer.text == port.posts[-1][2]
