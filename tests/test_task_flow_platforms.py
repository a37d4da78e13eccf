"""Steps side by side on Slack (the real bolt app against the fake Web API) and Discord (real
discord.py against the fake REST and gateway): the one plan message shows both steps under way,
their model calls overlap (the scripted double's !!overlap gate), and the step that needs both
waits for them. In-process: the step attempt counters /metrics serves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY

from bot.inbound import Inbound
from bot.slack.text import unescape_from_slack
from tests.discord_harness import settle
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import SlackHarness
from tests.test_task_flow import TWO_THEN_ONE
from tests.test_task_steering_platforms import (
    MESSAGES,
    command,
    discord_plan,
    discord_speakers,
    slack_plan,
    slack_speakers,
)
from tests.test_tasks import plan_json

TASK = f"Two at once !!plan {TWO_THEN_ONE} !!overlap 2"
BOTH_UNDER_WAY = ["[>] 1. Part 1 — Sage", "[>] 2. Part 2 — Nova", "[ ] 3. Part 3 — Rex (after 1, 2)"]


def both_then_rex(speakers: list[str]) -> bool:
    return sorted(speakers[:2]) == ["Nova", "Sage"] and speakers[2] == "Rex"  # then the task's answer


async def test_slack_two_steps_run_at_once_in_one_plan_message(slack: SlackHarness) -> None:
    await slack.command("/task", TASK)
    await slack.bot.wait_idle()
    shown = [unescape_from_slack(c.args["text"]).splitlines() for c in slack.fake.calls_to("chat.update")]
    assert BOTH_UNDER_WAY in [lines[1:4] for lines in shown]
    assert both_then_rex(slack_speakers(slack))  # no "could not answer": the gate opened
    assert slack_plan(slack)[-1] == "Done: all 3 steps completed."


async def test_discord_two_steps_run_at_once_in_one_plan_message(
    fake: FakeDiscord, open_bot: Callable[..., Any]
) -> None:
    async with open_bot() as bot:
        await command(fake, bot, TASK)
        await settle(bot)
    edits = [c.json["content"].splitlines() for c in fake.find_calls("PATCH", rf"{MESSAGES}/\d+")]
    assert BOTH_UNDER_WAY in [lines[1:4] for lines in edits]
    assert both_then_rex(discord_speakers(fake))
    assert discord_plan(fake)[-1] == "Done: all 3 steps completed."


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_step_attempts_are_counted_by_outcome_and_failures_by_cause(open_test_app) -> None:
    def attempts(outcome: str) -> float:
        return counted("roundtable_task_step_attempts_total", outcome=outcome)

    before = {outcome: attempts(outcome) for outcome in ("completed", "retried", "failed")}
    failed_before = counted("roundtable_task_step_failures_total", cause="model")
    two = plan_json([(1, "research", []), (2, "writing", [1])])
    one = plan_json([(1, "research", [])])
    async with open_test_app() as app:
        # Sage's step fails twice, then completes, and Nova's after it; then a step that fails three times.
        await app.service.handle(Inbound("console:general", "u1", "Ana", f"/task Count !!plan {two} !!fail 2"))
        await app.service.wait_idle()
        await app.service.handle(Inbound("console:general", "u1", "Ana", f"/task Lose !!plan {one} !!fail 3"))
        await app.service.wait_idle()
    assert attempts("retried") - before["retried"] == 4
    assert attempts("completed") - before["completed"] == 2
    assert attempts("failed") - before["failed"] == 1
    assert counted("roundtable_task_step_failures_total", cause="model") - failed_before == 1
