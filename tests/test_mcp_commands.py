"""/tools, "Approve always" and `/approvals forget SERVER.TOOL` on each surface, with the notes MCP
server (tests/mcp_notes_server.py) running over stdio: the console (`python -m bot console --script`),
the real Slack app on the fake Slack Web API, and the real discord.py client on the fake Discord
gateway, with the real providers' SDKs on the fake Gemini and OpenAI servers; and /readyz (bot/ops.py)
while the server is killed and restarted. What the server received is read from its own call log."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.ops import serving_ops
from storage import approvals, tool_grants
from storage.records import ApprovalStatus
from tests.conftest import run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.providers import PROVIDERS, fake_provider
from tests.mcp_setup import calls_received, free_port, notes_environment, server_pid, stdio_sections
from tests.slack_harness import APPROVER, KEY, StartSlack
from tests.test_actions_wire import Provider
from tests.test_ops import wait_for_status

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

WRITE = {"name": "write_note", "args": {"title": "launch", "text": "We launched on Monday"}}
RETRO = {"name": "write_note", "args": {"title": "retro", "text": "Went well"}}
TOOLS_HERE = [
    "MCP tools the personas here may use, by server:",
    "notes: up (stdio)",
    "  read_note (read-only: runs at once): Sage, Rex",
]
WAITS = "  write_note (waits for approval): Rex"
GRANTED = "  write_note (approved always here): Rex"
GRANTS_HEADING = "Tools approved always here (/approvals forget SERVER.TOOL makes one wait again):"
FORGOTTEN = "notes.write_note waits for approval again in this channel ({who} withdrew Approve always)."


@pytest.fixture
def call_log(tmp_path: Path) -> Iterator[Path]:
    with notes_environment(tmp_path) as log:
        yield log


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    async with fake_provider(request.param, reply_text="Happy to help with that, tell me more.") as (server, models):
        yield Provider(request.param, server, models)


# -- the console ------------------------------------------------------------------------------------


def test_the_console_lists_tools_approves_always_and_forgets(tmp_path: Path, call_log: Path) -> None:
    config = write_config(tmp_path, stdio_sections(tmp_path))
    script = "\n".join(
        [
            "/tools",
            "/approvals forget notes.write_note",
            "/approvals forget write_note",
            'Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}',
            "/approve 1 always",
            "/approvals",
            'Rex, note the retro. !!act write_note {"title": "retro", "text": "Went well"}',
            "/tools",
            "/approvals forget notes.write_note",
            "/approvals",
            'Rex, once more. !!act write_note {"title": "again", "text": "Again"}',
            'Nova, publish it. !!act publish_post {"channel": "news", "text": "We launched!"}',
            "/approve 4 always",  # the retro ran at once under claim #2 (tests/test_tool_loop.py): "again" is #3
        ]
    )
    out = [line.removeprefix("[system] ") for line in run_console(config, script + "\n").splitlines()]

    def after(typed: str, count: int = 1, nth: int = 0) -> list[str]:
        starts = [i for i, line in enumerate(out) if line == f"[you] {typed}"]
        return out[starts[nth] + 1 : starts[nth] + 1 + count]

    assert after("/tools", 4) == [*TOOLS_HERE, WAITS]
    assert after("/approvals forget notes.write_note") == ["notes.write_note is not approved always in this channel."]
    assert after("/approvals forget write_note") == [
        "usage: /approvals [mode in-command|in-the-loop|on-the-loop | retry N | close N | forget SERVER.TOOL]"
        " (name the tool as SERVER.TOOL, e.g. time.convert_time)"
    ]
    assert after("/approve 1 always", 2) == [
        "Approved #1; notes.write_note now runs without asking in this channel.",
        "[action 1] executed: the tool answered (40 characters)",
    ]
    assert after("/approvals", 3) == ["No approvals are pending here.", GRANTS_HEADING, "notes.write_note, by you"]
    assert after("/tools", 4, nth=1) == [*TOOLS_HERE, GRANTED]
    assert after("/approvals forget notes.write_note", nth=1) == [FORGOTTEN.format(who="you")]
    assert after("/approvals", nth=1) == ["No approvals are pending here."]
    assert any(line.startswith("[approval 3] Rex wants notes.write_note(title='again'") for line in out)
    assert after("/approve 4 always") == ["Only a tool from an MCP server can be approved always."]
    # The first call after Approve always, and the retro at once; "again" waits, as it should.
    assert [c["args"]["title"] for c in calls_received(call_log)] == ["launch", "retro"]
    assert not any("[approval" in line and "retro" in line for line in out)


# -- Slack ------------------------------------------------------------------------------------------


async def test_slack_lists_tools_and_grants_and_an_approver_forgets_a_tool(
    start_slack: StartSlack, tmp_path: Path, call_log: Path
) -> None:
    async with start_slack(stdio_sections(tmp_path)) as slack:
        await slack.command("/tools", "")
        await slack.say(
            'Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}', "1700000300.000100"
        )
        [request] = slack.approval_requests()
        await slack.click("approval_approve_always", request)
        await slack.command("/approvals", "")
        await slack.command("/tools", "")
        await slack.command("/approvals", "forget notes.write_note")  # Ana is no approver
        await slack.command("/approvals", "forget notes.write_note", user_id=APPROVER)
        granted_after = await tool_grants.grants(slack.bot.roundtable.db, KEY)
        await slack.say('Rex, again. !!act write_note {"title": "again", "text": "Again"}', "1700000301.000100")

    tools, listing, granted_tools, refused = [reply["text"] for reply in slack.replies_to_command()]
    assert tools.splitlines() == [*TOOLS_HERE, WAITS]
    assert listing.splitlines() == ["No approvals are pending here.", GRANTS_HEADING, "notes.write_note, by Bea"]
    assert granted_tools.splitlines() == [*TOOLS_HERE, GRANTED]
    assert refused == "Only approvers can withdraw an Approve always."
    assert FORGOTTEN.format(who="Bea") in [post["text"] for post in slack.posts()]  # told to the channel
    assert granted_after == []
    assert len(slack.approval_requests()) == 2  # the next call waits again
    assert [c["args"]["title"] for c in calls_received(call_log)] == ["launch"]


async def test_forgetting_a_tool_in_a_channel_also_withdraws_what_its_threads_approved_always(
    start_slack: StartSlack, tmp_path: Path, call_log: Path
) -> None:
    parent = "1700000310.000100"
    thread = f"{KEY}:{parent}"
    async with start_slack(stdio_sections(tmp_path)) as slack:
        await slack.say("Rex, a thread for the launch notes.", parent)
        note = 'Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}'
        await slack.say(note, "1700000310.000200", thread_ts=parent)
        [request] = slack.approval_requests()
        await slack.click("approval_approve_always", request)  # Bea, in the thread
        granted_in_thread = await tool_grants.grants(slack.bot.roundtable.db, thread)
        await slack.command("/approvals", "forget notes.write_note", user_id=APPROVER)  # in the channel
        left_in_thread = await tool_grants.grants(slack.bot.roundtable.db, thread)
        again = 'Rex, again. !!act write_note {"title": "again", "text": "Again"}'
        await slack.say(again, "1700000310.000300", thread_ts=parent)

    assert [grant.tool for grant in granted_in_thread] == ["notes.write_note"]
    withdrawn = (
        "notes.write_note waits for approval again in 1 of this channel’s threads (Bea withdrew Approve always)."
    )
    assert withdrawn in [post["text"] for post in slack.posts()]  # told to the channel
    assert left_in_thread == []
    assert len(slack.approval_requests()) == 2  # the thread's next call waits again
    assert [c["args"]["title"] for c in calls_received(call_log)] == ["launch"]


# -- Discord ----------------------------------------------------------------------------------------

DISCORD_APPROVERS = {"approvals": {"approvers": {"discord": [str(p.HUMAN_USER_ID)]}}}
GENERAL, NEWS = p.TEXT_CHANNEL_ID, p.NEWS_CHANNEL_ID
LONG = 60  # seconds: a loaded machine is slow, and a wait ends as soon as its call arrives


def _requests(fake: FakeDiscord, channel_id: int) -> list[tuple[int, list[str]]]:
    """(message id, button custom ids) of each request with buttons the bot posted in the channel."""
    return [
        (i, [c["custom_id"] for row in m["components"] for c in row["components"]])
        for i, m in fake.messages.items()
        if m["components"] and str(m["channel_id"]) == str(channel_id)
    ]


async def _answer(fake: FakeDiscord, interaction: int) -> str:
    [followup] = await fake.wait_for_calls(
        "POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{interaction}", timeout=LONG
    )
    assert followup.json["flags"] == 64  # only to whoever typed it
    return str(followup.json["content"])


async def test_discord_approve_always_runs_the_next_call_at_once_in_that_channel_only(
    fake: FakeDiscord, open_bot: Any, provider: Provider, tmp_path: Path, call_log: Path
) -> None:
    sections = {**stdio_sections(tmp_path), **DISCORD_APPROVERS}
    async with open_bot(sections=sections, models=provider.models) as bot:
        provider.queue("I will write it once approved.", WRITE)
        await fake.send_message("Rex, note the launch")
        await fake.wait_for_calls(
            "POST", rf"/channels/{GENERAL}/messages", where=lambda c: bool(c.json.get("components"))
        )
        [(message_id, buttons)] = _requests(fake, GENERAL)
        approval_id = int(buttons[0].split(":")[1])
        assert buttons == [
            f"approval:{approval_id}:{verb}" for verb in ("approve", "always", "reject", "feedback", "view", "revise")
        ]

        provider.queue("It is in the notebook.")
        clicked = await fake.click_button(message_id, f"approval:{approval_id}:always")
        [callback] = await fake.wait_for_calls("POST", rf"/interactions/{clicked}/[^/]+/callback", timeout=LONG)
        assert callback.json["type"] == 6  # deferred: the request message is edited instead
        await fake.wait_for_calls(
            "PATCH",
            rf"/channels/{GENERAL}/messages/{message_id}",
            where=lambda c: "executed" in c.json["content"],
            timeout=LONG,
        )
        await settle(bot)
        assert [c["args"] for c in calls_received(call_log)] == [WRITE["args"]]

        provider.queue("Noting the retro too.", RETRO)
        provider.queue("The retro is in the notebook too.")  # asked again with the result, in the same turn
        await fake.send_message("Rex, note the retro: Went well")
        await fake.wait_for_calls(
            "POST",
            r"/webhooks/\d+/[^/]+",
            where=lambda c: c.json.get("content") == "The retro is in the notebook too.",
            timeout=LONG,
        )
        await settle(bot)
        assert len(_requests(fake, GENERAL)) == 0  # no request: it ran at once
        assert [c["args"] for c in calls_received(call_log)] == [WRITE["args"], RETRO["args"]]

        provider.queue("", {"name": "write_note", "args": {"title": "news", "text": "Elsewhere"}})
        await fake.send_message("Rex, note it here too", channel_id=NEWS)
        await fake.wait_for_calls(
            "POST", rf"/channels/{NEWS}/messages", where=lambda c: bool(c.json.get("components")), timeout=LONG
        )
        await settle(bot)
        [pending] = await approvals.pending(bot.app.db)
        grants = await tool_grants.grants(bot.app.db, f"discord:{GENERAL}")

    assert pending.channel_key == f"discord:{NEWS}" and pending.status is ApprovalStatus.PENDING
    assert [(g.tool, g.channel_key) for g in grants] == [("notes.write_note", f"discord:{GENERAL}")]
    assert len(calls_received(call_log)) == 2  # another channel: it waits for its own approval


async def test_discord_tools_lists_grants_and_an_approver_forgets_a_tool(
    fake: FakeDiscord, open_bot: Any, tmp_path: Path, call_log: Path
) -> None:
    sections = {**stdio_sections(tmp_path), **DISCORD_APPROVERS}
    async with open_bot(sections=sections) as bot:
        await fake.send_message('Rex, note it. !!act write_note {"title": "launch", "text": "We launched"}')
        await fake.wait_for_calls(
            "POST", rf"/channels/{GENERAL}/messages", where=lambda c: bool(c.json.get("components"))
        )
        [(message_id, buttons)] = _requests(fake, GENERAL)
        await fake.click_button(message_id, buttons[1])  # Approve always
        await fake.wait_for_calls(
            "PATCH",
            rf"/channels/{GENERAL}/messages/{message_id}",
            where=lambda c: "executed" in c.json["content"],
            timeout=LONG,
        )
        await settle(bot)
        tools = await _answer(fake, await fake.send_slash_command("tools", {}, permissions=p.MEMBER_PERMISSIONS))
        listing = await _answer(fake, await fake.send_slash_command("approvals", {}))
        outsider = p.user(p.OWNER_USER_ID, "Owner")  # not an approver
        refused = await fake.send_slash_command("approvals", {"forget": "notes.write_note"}, user=outsider)
        [refusal] = await fake.wait_for_calls(
            "POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{refused}", timeout=LONG
        )
        forgot = await fake.send_slash_command("approvals", {"forget": "notes.write_note"})
        forgotten = await _answer(fake, forgot)
        told = await fake.wait_for_calls(
            "POST",
            rf"/channels/{GENERAL}/messages",
            where=lambda c: "withdrew Approve always" in c.json["content"],
            timeout=LONG,
        )
        await settle(bot)
        grants = await tool_grants.grants(bot.app.db, f"discord:{GENERAL}")

    assert tools.splitlines() == [*TOOLS_HERE, GRANTED]
    assert listing.splitlines()[1:] == [GRANTS_HEADING, "notes.write\\_note, by Ana"]
    assert refusal.json["content"] == "Only approvers can withdraw an Approve always."
    assert forgotten == FORGOTTEN.format(who="Ana") and len(told) == 1
    assert grants == []


# -- /readyz -----------------------------------------------------------------------------------------


async def test_readyz_says_503_while_an_mcp_server_is_down_and_200_once_it_is_back(
    open_test_app: Any, tmp_path: Path, call_log: Path
) -> None:
    async with (
        open_test_app(stdio_sections(tmp_path)) as app,
        serving_ops(app.db, app.readiness, "127.0.0.1", free_port()) as url,
        aiohttp.ClientSession() as http,
    ):
        assert await wait_for_status(http, f"{url}/readyz", 200) == "ready\n"
        os.killpg(server_pid(tmp_path), signal.SIGKILL)  # the server's whole process group, as a crash would
        reasons = await wait_for_status(http, f"{url}/readyz", 503)
        assert reasons.startswith("mcp notes: not reachable (")
        assert await wait_for_status(http, f"{url}/readyz", 200, timeout=120) == "ready\n"  # restarted
        assert app.mcp is not None
        answer = await app.mcp.call("notes", "read_note", {"title": "groceries"})
        assert answer.ok and "milk, eggs, bread" in answer.text
