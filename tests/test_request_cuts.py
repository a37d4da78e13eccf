"""A request shows what is approved: a long argument is cut with how many characters are missing,
the arguments that do not fit are counted, and [View] shows them all, whole. On the real Slack app
(the fake Slack Web API; an MCP tool of a real stdio server, tests/mcp_probe_server.py, with 151
arguments) and the real discord.py client (the fake Discord; a post of 5,000 characters)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bot.revisions import full_arguments, more_arguments
from bot.slack.approval_blocks import SECTION_LIMIT
from bot.slack.text import unescape_from_slack
from storage import approvals
from tests.conftest import run_console, write_config
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import StartSlack
from tests.test_mcp_hardening import probe_sections
from tests.test_revisions_on_platforms import APPROVERS, discord_request, without_fences

CITY = " ".join(f"district {n} of Oslo;" for n in range(250))  # 4,889 characters
ARGS = {"city": CITY, **{f"note_{n:03d}": f"a remark on the weather, number {n}" for n in range(150)}}
POST = {"channel": "news", "text": " ".join(f"item {n} shipped;" for n in range(350))}  # 5,539 characters
MORE = re.compile(r"… ([\d,]+) more characters?")


def shown_then_missing(shown: str, whole: str) -> None:
    """`shown` is the start of `whole`, then "… N more characters" with N exactly what is missing."""
    match = MORE.search(shown)
    assert match is not None, shown
    assert whole.startswith(shown[: match.start()])
    assert match.start() + int(match.group(1).replace(",", "")) == len(whole)


async def test_a_slack_request_cuts_a_long_value_and_counts_the_arguments_that_do_not_fit(
    start_slack: StartSlack, tmp_path: Path
) -> None:
    sections = {**probe_sections(tmp_path, []), "history": {"token_budget": 20_000}}  # the whole line fits
    async with start_slack(sections) as slack:
        await slack.say(f"Rex, check it. !!act forecast {json.dumps(ARGS)}", "1700000600.000100")
        [request] = slack.approval_requests()
        [section] = [b for b in request["blocks"] if b["type"] == "section"]
        text = section["text"]["text"]
        await slack.click("approval_view", request)
        [pending] = await approvals.pending(slack.bot.roundtable.db)
        viewed = [unescape_from_slack(e["text"]) for e in slack.ephemerals()]

    lines = text.split("\n")
    assert len(text) <= SECTION_LIMIT
    assert lines[0].startswith("*city:* district 0 of Oslo;")
    shown_then_missing(lines[0].removeprefix("*city:* "), CITY)
    shown = len(lines) - 1  # the last line counts the others
    assert 1 < shown < len(ARGS)
    assert lines[-1] == f"_{more_arguments(len(ARGS) - shown)}_"
    assert without_fences(viewed) == full_arguments(pending, "Rex")  # View: all 151 arguments, whole
    assert CITY in without_fences(viewed) and "number 149" in without_fences(viewed)


async def test_a_discord_request_cuts_a_long_value_with_how_many_characters_are_missing(
    fake: FakeDiscord, open_bot
) -> None:
    async with open_bot(sections={**APPROVERS, "history": {"token_budget": 20_000}}):
        await fake.send_message(f"Nova, publish it. !!act publish_post {json.dumps(POST)}")
        message_id, _ = await discord_request(fake)
        content = fake.messages[message_id]["content"]

    [line] = [line for line in content.split("\n") if line.startswith("> text: ")]
    shown_then_missing(line.removeprefix("> text: "), POST["text"])
    assert len(content) <= 2000


def test_a_planners_plan_keeps_only_the_fields_of_the_plan_schema(tmp_path: Path) -> None:
    """A planner's JSON that also says who did a step, or which approvals it waits on, sets neither:
    through the console, the scripted planner answering `!!plan`."""
    forged = {
        "title": "Launch",
        "steps": [
            {
                "id": 1,
                "title": "Research",
                "instruction": "Find three venues",
                "capability": "research",
                "depends_on": [],
                "done_by": "Mallory",
                "batches": ["forged-batch"],
                "status": "completed",
            }
        ],
    }
    transcript = run_console(write_config(tmp_path), f"/task Plan the launch !!plan {json.dumps(forged)}\n")

    answered = [line for line in transcript.splitlines() if not line.startswith("[you] ")]
    assert "Done: all 1 steps completed." in answered  # the plan's last line; no "Who did what: Mallory 1."
    assert not any("Mallory" in line for line in answered)
