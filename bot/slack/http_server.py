"""HTTP mode: one aiohttp server with POST /slack/events (every Slack request) and GET /healthz.

bolt parses a body before it checks the signature, so a request is checked here first, in an order
where nothing anyone can send unsigned reaches a parser that can throw: the body must be UTF-8 (400),
then signed with the signing secret, checked by slack_sdk's SignatureVerifier (401), then JSON or a
form that parses, the way bolt will, into an object nested at most MAX_DEPTH deep, which bolt's
payload readers can read (400). Refusals are logged as one line.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import parse_body
from slack_bolt.request.payload_utils import (
    to_action,
    to_command,
    to_event,
    to_message,
    to_options,
    to_shortcut,
    to_step,
    to_view,
)
from slack_sdk.signature import SignatureVerifier

from bot.numbers import whole_number

EVENTS_PATH = "/slack/events"  # events, slash commands and interactivity all arrive here
HEALTH_PATH = "/healthz"
MAX_DEPTH = 32  # Slack's deepest payloads (views with blocks) nest about 12 levels
MAX_TIMESTAMP = 10**12  # seconds; a longer header is not a time
CONTENT_TYPES = ("application/json", "application/x-www-form-urlencoded")  # events; commands and interactivity
# What bolt reads from every request before any listener or error handler runs.
BOLT_READERS = (to_options, to_shortcut, to_action, to_view, to_command, to_event, to_message, to_step)

log = logging.getLogger(__name__)


class SignedBolt(AsyncApp):
    """bolt's AsyncApp plus the verifier the HTTP server checks every request with before anything reads
    it. None in Socket Mode, where requests are not signed; such an app cannot be served over HTTP."""

    def __init__(self, *, signature_verifier: SignatureVerifier | None, **options: Any) -> None:
        super().__init__(**options)
        self.signature_verifier = signature_verifier


def is_signed(verifier: SignatureVerifier, body: str, headers: Mapping[str, str]) -> bool:
    """slack_sdk's check, given only what it can compare: a whole-number timestamp, an ASCII signature."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if whole_number(timestamp, 0, MAX_TIMESTAMP) is None or not signature.isascii():
        return False
    return verifier.is_valid(body=body, timestamp=timestamp, signature=signature)


def readable_body(body: str, content_type: str) -> dict[str, Any] | None:
    """The body as bolt parses it, when that is a JSON object (or a form) of bounded depth; else None."""
    try:
        parsed = parse_body(body, content_type)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) and not _nested_deeper_than(parsed, MAX_DEPTH) else None


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` deep in value (counted without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _refuse(status: int, reason: str) -> web.Response:
    log.warning("Slack request refused (%s): %s", status, reason)
    return web.Response(status=status, text=reason)


def slack_web_app(bolt: SignedBolt) -> web.Application:
    verifier = bolt.signature_verifier
    if verifier is None:
        raise ValueError("serving Slack over HTTP needs the signing secret")

    async def slack_request(request: web.Request) -> web.Response:
        try:
            body = (await request.read()).decode("utf-8")
        except UnicodeDecodeError:
            return _refuse(400, "the body is not UTF-8")
        headers = {name.lower(): value for name, value in request.headers.items()}
        if not is_signed(verifier, body, headers):
            return _refuse(401, "invalid or missing signature")
        content_type = headers.get("content-type", "").split(";")[0]  # as bolt reads it
        if content_type not in CONTENT_TYPES:
            return _refuse(400, "the content type is not JSON or a form")
        if readable_body(body, content_type) is None:
            return _refuse(400, "the body is not a JSON object or form")
        try:  # signed, so from Slack; but should a field Slack always sends be missing, bolt would fail
            bolt_request = AsyncBoltRequest(body=body, query=request.query_string, headers=dict(headers))
            for read in BOLT_READERS:
                read(bolt_request.body)
        except Exception as exc:
            return _refuse(400, f"bolt cannot read the body ({type(exc).__name__})")
        return await to_aiohttp_response(await bolt.async_dispatch(bolt_request))

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post(EVENTS_PATH, slack_request)
    app.router.add_get(HEALTH_PATH, health)
    return app


@asynccontextmanager
async def serving_http(bolt: SignedBolt, host: str, port: int) -> AsyncIterator[str]:
    """Serve until the block ends; yields the server's base URL (port 0 picks a free port)."""
    runner = web.AppRunner(slack_web_app(bolt), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await runner.cleanup()
