"""Malformed Slack HTTP requests get 400 or 401, never a 500 or a traceback, and change nothing.

Requests go over the wire to the real bolt app (tests/test_slack.py's harness); "signed" ones carry
a valid signature, so they test what happens after the signature check, and "unsigned" ones what
anyone on the internet can send.
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import pytest

from tests.fakes.slack_payloads import envelope, message, signed_headers
from tests.slack_harness import SlackHarness

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
EVENT = json.dumps(envelope(message("Sage, are you there?", "1700000200.000100"), "EvGood"))


def nested(depth: int) -> str:
    return '{"type": "event_callback", "event": ' + "[" * depth + "]" * depth + "}"


NOT_OBJECTS = {
    "a JSON array": ("[]", JSON),
    "JSON null": ("null", JSON),
    "a JSON number": ("3", JSON),
    "a JSON string": ('"event_callback"', JSON),
    "invalid JSON": ('{"type": ', JSON),
    "JSON nested 40 deep": (nested(40), JSON),
    "JSON nested 100,000 deep": (nested(100_000), JSON),
    "a number with 5,000 digits": ('{"event_time": ' + "9" * 5000 + "}", JSON),
    "payload= an array": (urlencode({"payload": "[]"}), FORM),
    "payload= null": (urlencode({"payload": "null"}), FORM),
    "payload= a string": (urlencode({"payload": '"block_actions"'}), FORM),
    "payload= a number": (urlencode({"payload": "7"}), FORM),
    "payload= invalid JSON": (urlencode({"payload": "{not json"}), FORM),
    "payload= nested 100,000 deep": (urlencode({"payload": nested(100_000)}), FORM),
    "plain text": ("command=/moderate&text=on", "text/plain"),
}


async def post_raw(slack: SlackHarness, body: bytes, headers: dict[str, str]) -> int:
    async with slack.http.post(f"{slack.url}/slack/events", data=body, headers=headers) as response:
        return response.status


@pytest.mark.parametrize("body, content_type", NOT_OBJECTS.values(), ids=NOT_OBJECTS.keys())
async def test_a_body_that_is_not_a_json_object_is_refused_signed_or_not(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture, body: str, content_type: str
) -> None:
    unsigned = {"Content-Type": content_type}
    assert await post_raw(slack, body.encode(), unsigned) == 401
    assert await post_raw(slack, body.encode(), signed_headers(body, content_type)) == 400
    await slack.bot.wait_idle()

    assert "Traceback" not in caplog.text
    assert slack.fake.calls == []


BAD_HEADERS = {
    "a timestamp in words": {"X-Slack-Request-Timestamp": "soon"},
    "a timestamp in Arabic-Indic digits": {"X-Slack-Request-Timestamp": "١٧٠٠٠٠٠٠٠٠"},
    "a negative timestamp": {"X-Slack-Request-Timestamp": "-1"},
    "a timestamp with spaces": {"X-Slack-Request-Timestamp": f" {int(time.time())} "},
    "a timestamp in scientific notation": {"X-Slack-Request-Timestamp": "1.7e9"},
    "a 400-digit timestamp": {"X-Slack-Request-Timestamp": "9" * 400},
    "an empty timestamp": {"X-Slack-Request-Timestamp": ""},
    "a non-ASCII signature": {"X-Slack-Signature": "v0=é" + "0" * 63},
    "an empty signature": {"X-Slack-Signature": ""},
}


@pytest.mark.parametrize("changed", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
async def test_bad_signature_headers_are_refused(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture, changed: dict[str, str]
) -> None:
    headers = {**signed_headers(EVENT, JSON), **changed}
    assert await post_raw(slack, EVENT.encode(), headers) == 401
    await slack.bot.wait_idle()

    assert "Traceback" not in caplog.text
    assert slack.fake.calls == []


@pytest.mark.parametrize("missing", ["X-Slack-Request-Timestamp", "X-Slack-Signature", "Content-Type"])
async def test_missing_headers_are_refused(slack: SlackHarness, caplog: pytest.LogCaptureFixture, missing: str) -> None:
    form = urlencode({"command": "/moderate", "text": "on"})
    headers = {k: v for k, v in signed_headers(form, FORM).items() if k != missing}
    status = await post_raw(slack, form.encode(), headers)
    await slack.bot.wait_idle()

    assert status == (400 if missing == "Content-Type" else 401)
    assert "Traceback" not in caplog.text
    assert slack.fake.calls_to("chat.postMessage") == []


async def test_a_body_that_is_not_utf8_is_refused(slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    body = b'{"type": "event_callback", "x": "\xff\xfe"}'
    headers = {"Content-Type": JSON, "X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=00"}
    assert await post_raw(slack, body, headers) == 400
    assert "Traceback" not in caplog.text


async def test_after_all_that_a_genuine_event_is_still_answered(slack: SlackHarness) -> None:
    for body, content_type in NOT_OBJECTS.values():
        await post_raw(slack, body.encode(), signed_headers(body, content_type))
    assert await post_raw(slack, EVENT.encode(), signed_headers(EVENT, JSON)) == 200
    await slack.bot.wait_idle()

    [reply] = slack.posts()
    assert reply["username"] == "Sage"


SIGNED_BUT_INCOMPLETE = {
    "a button click without an action_id": {"type": "block_actions", "user": {"id": "UAPPROVER"}, "actions": [{}]},
    "a form submission whose view has no type": {
        "type": "view_submission",
        "user": {"id": "UAPPROVER"},
        "view": {"callback_id": "approval_feedback_modal"},
    },
}


@pytest.mark.parametrize("payload", SIGNED_BUT_INCOMPLETE.values(), ids=SIGNED_BUT_INCOMPLETE.keys())
async def test_a_signed_payload_lacking_what_bolt_reads_is_refused(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture, payload: dict[str, object]
) -> None:
    """Slack always sends these fields; bolt indexes them unchecked, which would be a 500 and a traceback."""
    form = urlencode({"payload": json.dumps(payload)})
    assert await post_raw(slack, form.encode(), signed_headers(form, FORM)) == 400
    await slack.bot.wait_idle()

    assert "Traceback" not in caplog.text
    assert [call.method for call in slack.fake.calls if call.method != "auth.test"] == []
