"""An approval request made inside a task names the task, the step and the request's risk: in the
console (scripted model, `python -m bot console --script`), on Slack (the real bolt app against the
fake Web API) and on Discord (real discord.py against the fake REST and gateway); stored with the
approval and in the audit log. A request outside a task names its risk only."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.slack.text import unescape_from_slack
from tests.conftest import run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import SlackHarness

ACT = '!!act publish_post {"channel": "news", "text": "We launched!"}'
# Nova's step is the first of three; its publish_post waits (sensitive: "publish", so at least high).
TASK = f"Announce the launch; research the reactions; review them {ACT}"
SERVES = "Step 1 of 3 of task #1 “Announce the launch” · risk high"
APPROVERS = {"approvals": {"approvers": {"discord": [str(p.OWNER_USER_ID)]}}}


def stored(tmp_path: Path, query: str) -> list[dict[str, Any]]:
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(query)]


def test_console_a_request_in_a_task_names_its_step_and_risk_and_both_are_stored(tmp_path: Path) -> None:
    transcript = run_console(write_config(tmp_path), f"/task {TASK}\nNova, please. {ACT}\n/approvals\n")
    [in_task] = [line for line in transcript.splitlines() if line.startswith("[approval 1] ")]
    assert in_task.startswith("[approval 1] Nova wants publish_post(channel='news', text='We launched!')")
    assert in_task.endswith(f" - {SERVES}")
    [outside] = [line for line in transcript.splitlines() if line.startswith("[approval 2] ")]
    assert outside.endswith(" - risk high") and "task" not in outside  # a plain round's request
    listing = transcript.split("[you] /approvals", 1)[1]
    assert f"#1 Nova wants publish_post(channel='news', text='We launched!') ({SERVES})" in listing
    assert "#2 Nova wants publish_post(channel='news', text='We launched!') (risk high)" in listing

    first, second = stored(tmp_path, "SELECT * FROM approvals ORDER BY id")
    assert (first["risk"], first["task_id"], first["task_title"], first["task_step"], first["task_steps"]) == (
        "high",
        1,
        "Announce the launch",
        1,
        3,
    )
    assert second["risk"] == "high" and second["task_id"] is None
    requested = stored(tmp_path, "SELECT * FROM audit_log WHERE event = 'requested' ORDER BY id")
    assert [(e["approval_id"], e["risk"]) for e in requested] == [(1, "high"), (2, "high")]


async def test_slack_a_request_in_a_task_names_its_step_and_risk(slack: SlackHarness) -> None:
    await slack.command("/task", TASK)
    [request] = slack.approval_requests()
    context = [
        unescape_from_slack(element["text"])
        for block in request["blocks"]
        if block["type"] == "context"
        for element in block["elements"]
        if element.get("type") == "mrkdwn"
    ]
    assert any(text.startswith("Approval #1 · expires ") and text.endswith(f" · {SERVES}") for text in context)
    assert unescape_from_slack(request["text"]).endswith(f" · {SERVES}")  # the notification's text too


async def test_discord_a_request_in_a_task_names_its_step_and_risk(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        asked = await fake.send_slash_command("task", {"text": TASK}, permissions=p.MEMBER_PERMISSIONS)
        await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{asked}")
        await settle(bot)
    [request] = [m for m in fake.messages.values() if "**Approval #1**" in m["content"]]
    lines = request["content"].splitlines()
    assert lines[0] == "**Approval #1**: Nova wants to run `publish_post`"
    assert lines[1] == SERVES
    assert request["components"]  # the buttons, while it waits
