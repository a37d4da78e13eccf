"""Seeded fuzzing of everything people can send: no crash, no 5xx, no traceback, no ping.

Hypothesis generates lines for the console and requests for the Slack HTTP endpoint: channel
messages, slash commands with odd arguments, button clicks with odd values, feedback forms, and
raw bodies, signed or not. Each test keeps one app (its own event loop) across its examples, with
the scripted model, so the inputs are 2,400 in all in well under a minute. `derandomize` makes the
inputs the same on every run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import App, open_app
from bot.config import load_config
from bot.console import ConsolePort, ConsoleSession
from bot.slack.app import build_slack_app, make_web_client
from bot.slack.http_server import serving_http
from bot.slack.port import slack_port
from bot.slack.slack_bot import SlackBot
from storage import approvals
from tests.conftest import write_config
from tests.fakes.slack_api import APP_ID, BOT_USER_ID, TEAM_ID, FakeSlackApi
from tests.fakes.slack_payloads import CHANNEL, HUMAN, SIGNING_SECRET, envelope, message, signed_headers

T = TypeVar("T")

CONSOLE_EXAMPLES = 900
SLACK_EXAMPLES = 1500
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
APPROVER = "UAPPROVER"
UNESCAPED_PING = re.compile(r"<!(everyone|channel|here)\b|@(everyone|channel|here)\b", re.IGNORECASE)
POSTING = ("chat.postMessage", "chat.postEphemeral", "chat.update", "views.open", "response_url")
RESPONSE_URL = "http://fake-slack/response"  # replaced by the fake Slack's when sent
SERIAL = "SERIALNO"  # replaced by a new number when sent, so message ts, event and trigger ids are unique
PUBLISH = 'Nova, publish it. !!act publish_post {"channel": "news", "text": "<!channel> we launched"}'

# -- what people type -------------------------------------------------------------------------------

PINGS = st.sampled_from(["<!everyone>", "<!channel>", "<!here>", "@everyone", "@here", "@channel", "<@UAPPROVER>"])
NUMBERS = st.one_of(
    st.sampled_from(
        ["1", "0", "-1", "#1", "²", "①", "٣", "５", "1e3", " 7", "7_0", "+7", "9" * 30, "18446744073709551616"]
    ),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)
WORDS = st.one_of(
    # No persona ids: a "/dismiss nova" early on would leave nobody to answer the rest.
    st.sampled_from(
        ["on", "off", "status", "mode", "in-command", "in-the-loop", "list", "invite", "dismiss", "incident", "zorg"]
    ),
    NUMBERS,
    PINGS,
    st.text(max_size=12),
)
ARGUMENTS = st.one_of(st.lists(WORDS, max_size=4).map(" ".join), st.text(max_size=60))
TEXT = st.one_of(
    st.text(max_size=200), st.lists(st.one_of(st.text(max_size=20), PINGS, WORDS), max_size=8).map(" ".join)
)
TYPED_COMMANDS = [
    "moderate",
    "invite",
    "dismiss",
    "personas",
    "scene",
    "approvals",
    "approve",
    "reject",
    "trust",
    "bogus",
]
COMMAND = st.tuples(st.sampled_from(TYPED_COMMANDS), st.one_of(NUMBERS, WORDS), ARGUMENTS).map(
    lambda c: f"/{c[0]} {c[1]} {c[2]}"
)
CONSOLE_LINE = st.one_of(
    COMMAND,
    TEXT,
    st.tuples(st.sampled_from(["Nova", "Sage"]), TEXT).map(lambda c: f"{c[0]}, {c[1]}"),
)

# -- what Slack (or anyone) sends --------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
ODD_FIELD = st.one_of(
    st.none(),
    st.just(""),
    st.integers(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)


@dataclass(frozen=True)
class SlackInput:
    kind: str
    body: str
    content_type: str | None
    signed: bool = True


def _event(text: str, thread: str | None, user: Any, extra: dict[str, Any]) -> SlackInput:
    event = {**message(text, f"1700001000.{SERIAL}", user=user), **extra}
    if thread:
        event["thread_ts"] = thread
    return SlackInput("message", json.dumps(envelope(event, f"Ev{SERIAL}")), "application/json")


def _command(name: str, text: str, user: str) -> SlackInput:
    form = {
        "token": "t",
        "team_id": TEAM_ID,
        "channel_id": CHANNEL,
        "user_id": user,
        "command": name,
        "text": text,
        "api_app_id": APP_ID,
        "response_url": RESPONSE_URL,
        "trigger_id": f"fuzz.{SERIAL}",
    }
    return SlackInput("slash command", urlencode(form), "application/x-www-form-urlencoded")


def _click(action: str, value: Any, user: Any, team: Any) -> SlackInput:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "team_id": team},
        "team": {"id": TEAM_ID},
        "channel": {"id": CHANNEL},
        "container": {"channel_id": CHANNEL},
        "trigger_id": "fuzz.trigger",
        "actions": [{"action_id": action, "value": value, "block_id": "approval"}],
    }
    return SlackInput("button", urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


def _feedback(approval_id: Any, feedback: Any, user: Any) -> SlackInput:
    payload = {
        "type": "view_submission",
        "user": {"id": user, "team_id": TEAM_ID},
        "team": {"id": TEAM_ID},
        "view": {
            "type": "modal",
            "id": "V0FUZZ",
            "callback_id": "approval_feedback_modal",
            "private_metadata": approval_id,
            "state": {"values": {"feedback": {"feedback_text": {"value": feedback}}}},
        },
    }
    return SlackInput("feedback", urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


USERS = st.one_of(st.sampled_from([HUMAN, APPROVER, BOT_USER_ID, "UNOBODY"]), ODD_FIELD)
SLACK_INPUT = st.one_of(
    st.builds(
        _event,
        st.one_of(TEXT, COMMAND.map(lambda command: f"<@{BOT_USER_ID}> {command}")),
        st.one_of(st.none(), st.sampled_from(["1700000000.000100"]), st.text(max_size=8)),
        USERS,
        st.dictionaries(st.sampled_from(["subtype", "bot_id", "team", "user_team", "channel"]), ODD_FIELD, max_size=2),
    ),
    st.builds(
        _command,
        st.sampled_from(["/moderate", "/persona", "/approvals", "/trust"]),
        st.tuples(WORDS, st.one_of(NUMBERS, WORDS), ARGUMENTS).map(" ".join),
        st.sampled_from([HUMAN, APPROVER]),
    ),
    st.builds(
        _click,
        st.sampled_from(["approval_approve", "approval_reject", "approval_feedback"]),
        st.one_of(NUMBERS, ODD_FIELD),
        USERS,
        st.one_of(st.just(TEAM_ID), ODD_FIELD),
    ),
    st.builds(_feedback, st.one_of(NUMBERS, ODD_FIELD), st.one_of(TEXT, ODD_FIELD), USERS),
    st.builds(
        SlackInput,
        st.just("raw"),
        st.one_of(
            JSON_VALUES.map(json.dumps),
            st.text(max_size=200),
            st.builds(lambda v: urlencode({"payload": json.dumps(v)}), JSON_VALUES),
        ),
        st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain", None]),
        st.booleans(),
    ),
)

# -- one app per test, on its own event loop ---------------------------------------------------------


class Tracebacks(logging.Handler):
    """Every log record that carries a traceback, or mentions one."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.stack_info or "Traceback" in record.getMessage():
            self.records.append(record)


@dataclass
class Rig:
    loop: asyncio.AbstractEventLoop
    stack: AsyncExitStack
    tracebacks: Tracebacks
    lines: list[str] = field(default_factory=list)

    def run(self, work: Awaitable[T]) -> T:
        return self.loop.run_until_complete(work)

    def assert_no_traceback(self, what: object) -> None:
        records, self.tracebacks.records = self.tracebacks.records, []
        if records:
            raise AssertionError(f"{what!r} logged a traceback: {records[0].getMessage()}")


@pytest.fixture
def rig() -> Iterator[Rig]:
    loop = asyncio.new_event_loop()
    tracebacks = Tracebacks()
    logging.getLogger().addHandler(tracebacks)
    made = Rig(loop, AsyncExitStack(), tracebacks)
    try:
        yield made
    finally:
        loop.run_until_complete(made.stack.aclose())
        loop.close()
        logging.getLogger().removeHandler(tracebacks)


def fuzz_config(directory: Path, sections: dict[str, dict[str, Any]]) -> Any:
    return load_config(write_config(directory, {"bot": {"participants": ["nova"]}, **sections}))


# -- the console -------------------------------------------------------------------------------------


@pytest.fixture
def console(rig: Rig, tmp_path: Path) -> tuple[Rig, ConsoleSession]:
    port = ConsolePort(rig.lines.append)
    app: App = rig.run(rig.stack.enter_async_context(open_app(fuzz_config(tmp_path, {}), port, environ={})))
    session = ConsoleSession(app, "fuzz", write=rig.lines.append)
    rig.run(session.say(PUBLISH))  # a pending approval, so /approve 1 and /reject 1 find one
    rig.run(app.service.wait_idle())
    return rig, session


@settings(FUZZ, max_examples=CONSOLE_EXAMPLES)
@given(line=CONSOLE_LINE)
def test_console_lines(console: tuple[Rig, ConsoleSession], line: str) -> None:
    rig, session = console
    rig.run(session.say(line))
    rig.run(session.app.service.wait_idle(session.key))
    rig.assert_no_traceback(line)


# -- Slack over HTTP ---------------------------------------------------------------------------------


@dataclass
class SlackRig:
    rig: Rig
    bot: SlackBot
    fake: FakeSlackApi
    url: str
    http: aiohttp.ClientSession
    checked_calls: int = 0
    sent: int = 0

    async def send(self, sent: SlackInput) -> tuple[int, str]:
        self.sent += 1
        body = sent.body.replace(SERIAL, f"{self.sent:06d}")
        body = body.replace(quote(RESPONSE_URL, safe=""), quote(self.fake.response_url("fuzz"), safe=""))
        headers = signed_headers(body, sent.content_type or "") if sent.signed else {}
        if sent.content_type is not None:
            headers["Content-Type"] = sent.content_type
        else:
            headers.pop("Content-Type", None)
        async with self.http.post(f"{self.url}/slack/events", data=body.encode(), headers=headers) as response:
            answer = (response.status, await response.text())
        await self.bot.wait_idle()
        return answer

    def new_posts(self) -> list[str]:
        calls = self.fake.calls[self.checked_calls :]
        self.checked_calls = len(self.fake.calls)
        return [json.dumps(call.args) for call in calls if call.method in POSTING]


@pytest.fixture
def slack(rig: Rig, tmp_path: Path) -> SlackRig:
    async def start() -> SlackRig:
        fake = await rig.stack.enter_async_context(FakeSlackApi())
        sections = {"slack": {"api_base_url": fake.api_url}, "approvals": {"approvers": {"slack": [APPROVER]}}}
        config = fuzz_config(tmp_path, sections)
        client = make_web_client("xoxb-fuzz", fake.api_url)
        app = await rig.stack.enter_async_context(
            open_app(config, lambda db: slack_port(config, client, db), environ={})
        )
        bot = build_slack_app(app, config.settings.slack, SIGNING_SECRET, "xoxb-fuzz", client)
        rig.stack.push_async_callback(bot.close)
        url = await rig.stack.enter_async_context(serving_http(bot.bolt, "127.0.0.1", 0))
        http = await rig.stack.enter_async_context(aiohttp.ClientSession())
        return SlackRig(rig, bot, fake, url, http)

    started = rig.run(start())
    status, _ = rig.run(started.send(_event(PUBLISH, None, HUMAN, {})))
    assert status == 200 and rig.run(approvals.pending(started.bot.roundtable.db))
    return started


@settings(FUZZ, max_examples=SLACK_EXAMPLES)
@given(sent=SLACK_INPUT)
def test_slack_requests(slack: SlackRig, sent: SlackInput) -> None:
    status, body = slack.rig.run(slack.send(sent))

    assert status < 500, (sent, status, body)
    if not sent.signed:
        assert status == 401, sent
    slack.rig.assert_no_traceback(sent)
    for posted in [body, *slack.new_posts()]:
        assert not UNESCAPED_PING.search(posted), (sent, posted)
