"""A fake of the Slack Web API (and Socket Mode's websocket) on 127.0.0.1.

Give the SDK `base_url=fake.api_url`. Every call is recorded as a SlackCall (method name plus the
merged query, form or JSON arguments). Calls answer ok:true with plausible payloads unless an
answer was scripted with `rate_limit_next` or `fail_next`, or an `outage` is under way (HTTP 429
"ratelimited" with Retry-After, as Slack answers past a method's rate limit, then HTTP 503), or the
channel is one of `missing_channels` (channel_not_found). chat.postMessage hands out increasing
ts values from the clock and remembers each message in `messages` with its thread_ts and metadata, which
conversations.history and conversations.replies answer from (metadata only with include_all_metadata;
chat.update echoes the message and edits a remembered one, chat.delete removes one of the bot's, views.open the view). Posts to `fake.response_url(name)`
are recorded as method "response_url". `apps.connections.open` hands out `ws_url`, whose endpoint
says `hello`, records what the client sends back and can push envelopes with `send_envelope`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.loopback import LoopbackServer

TEAM_ID = "T0FAKE"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
APP_ID = "A0FAKE"


@dataclass
class SlackCall:
    method: str
    args: dict[str, Any]
    headers: dict[str, str]
    status: int = 200
    error: str | None = None
    answer: dict[str, Any] = field(default_factory=dict)  # the JSON body the fake answered with
    received_at: float = 0.0  # time.monotonic() when the request arrived
    answered_at: float = 0.0  # time.monotonic() when its answer was ready


@dataclass
class ScriptedAnswer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    done_anyway: bool = False  # the call took effect (a message was posted) before this failure was answered
    then: Callable[[], None] | None = None  # what happens in the workspace before the answer goes back
    held_until: asyncio.Event | None = None  # the answer waits for this (the call has taken effect meanwhile)


@dataclass
class KillOn:
    """SIGKILL the process `pid` when a call to `method` whose arguments `match` arrives: before
    Slack does it (`after_doing` False: the message is never posted) or after (it is posted, and the
    process never learns so). Once."""

    method: str
    match: Callable[[dict[str, Any]], bool]
    pid: int
    after_doing: bool


@dataclass
class FakeSlackApi(LoopbackServer):
    user_names: dict[str, str] = field(default_factory=lambda: {"UHUMAN": "Ana", "UAPPROVER": "Bea"})
    slow_users: dict[str, float] = field(default_factory=dict)  # users.info of these users takes this long
    held_users: dict[str, asyncio.Event] = field(default_factory=dict)  # users.info of these waits for the event
    # Workspace admins (users.info is_admin): the two users most tests act as may manage channels.
    admins: set[str] = field(default_factory=lambda: {"UHUMAN", "UAPPROVER"})
    owners: set[str] = field(default_factory=set)  # workspace owners (is_owner; the first one is_primary_owner)
    # Users of another workspace (a Slack Connect guest): users.info's user object names the user's own
    # team_id (https://api.slack.com/methods/users.info, https://api.slack.com/types/user).
    user_teams: dict[str, str] = field(default_factory=dict)
    calls: list[SlackCall] = field(default_factory=list)
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (channel, ts): a message Slack has
    socket_connections: int = 0
    socket_closes: int = 0
    socket_replies: list[dict[str, Any]] = field(default_factory=list)
    socket_down: bool = False  # refuse Socket Mode's websocket handshake (503), as during an outage
    socket_refusals: int = 0  # handshakes refused while down
    missing_channels: set[str] = field(default_factory=set)  # deleted: every call naming one is channel_not_found
    # chat.postMessage refuses, every time, a message whose text holds one of these, with its error: what Slack
    # answers a message it will never take as it is (https://docs.slack.dev/reference/methods/chat.postMessage,
    # "Errors": invalid_arguments, msg_blocks_too_long, metadata_too_large, cannot_reply_to_message, ...).
    refused_texts: dict[str, str] = field(default_factory=dict)
    # conversations.history and .replies answer at most this many messages a page, then has_more and a
    # next_cursor: 15, the maximum (and default) for apps not approved for the Slack Marketplace
    # (https://docs.slack.dev/changelog/2025/05/29/rate-limit-changes-for-non-marketplace-apps).
    page_limit: int = 15
    # The channels conversations.list names (id -> name), read page by page.
    channel_names: dict[str, str] = field(
        default_factory=lambda: {"C0GENERAL": "general", "C0OTHER": "other", "C0APPROVALS": "approvals"}
    )
    _outages: dict[str, tuple[float, float, float, int]] = field(
        default_factory=dict
    )  # start, 429 s, 5xx s, Retry-After
    _scripted: defaultdict[str, deque[ScriptedAnswer | None]] = field(
        default_factory=lambda: defaultdict(deque)
    )  # None: answered as usual
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _ts: int = 0
    kill_on: KillOn | None = None
    killed: int = 0  # processes killed by kill_on

    # -- addresses -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.root_url

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1) + "/link"

    def response_url(self, name: str) -> str:
        return f"{self.url}/response/{name}"

    # -- scripting and reading -------------------------------------------------------------------

    def rate_limit_next(self, method: str, retry_after: int = 0) -> None:
        self._scripted[method].append(
            ScriptedAnswer(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)})
        )

    def server_error_after(self, method: str, calls: int) -> None:
        """`method` answers the next `calls` calls as usual, then one with HTTP 503."""
        self._scripted[method].extend([None] * calls)
        self._scripted[method].append(ScriptedAnswer(503, {"ok": False, "error": "service_unavailable"}))

    def fail_next(self, method: str, error: str) -> None:
        self._scripted[method].append(ScriptedAnswer(200, {"ok": False, "error": error}))

    def fail_after_doing_next(
        self,
        method: str,
        *,
        status: int = 503,
        error: str = "service_unavailable",
        then: Callable[[], None] | None = None,
    ) -> None:
        """The next call to `method` takes effect (chat.postMessage posts its message), then answers the
        failure: Slack's internal_error and fatal_error may come after the operation partly succeeded
        (https://docs.slack.dev/reference/methods/chat.postMessage, "Errors"), and a 5xx from Slack's
        edge can come after the request reached Slack."""
        self._scripted[method].append(
            ScriptedAnswer(status, {"ok": False, "error": error}, done_anyway=True, then=then)
        )

    def hold_answer_after_doing_next(self, method: str) -> asyncio.Event:
        """The next call to `method` takes effect (chat.postMessage posts its message), then its answer
        waits until the returned event is set: a process killed meanwhile never learns it was done."""
        released = asyncio.Event()
        self._scripted[method].append(ScriptedAnswer(200, {}, done_anyway=True, held_until=released))
        return released

    def someone_says(self, channel: str, text: str, user: str = "UHUMAN") -> str:
        """A person's message in `channel`, which history will list; its ts."""
        ts = self._next_ts()
        self.messages[(channel, ts)] = {"type": "message", "user": user, "text": text, "ts": ts}
        return ts

    @staticmethod
    def direct_message_with(user: str) -> str:
        """The id of the app's direct message with `user`, as conversations.open gives it."""
        return f"D{user[1:]}"

    def texts_in(self, channel: str) -> list[str]:
        """The text of every message the channel holds (posted by anyone, however the post was answered)."""
        held = [(float(ts), m) for (where, ts), m in self.messages.items() if where == channel]
        return [str(m.get("text")) for _, m in sorted(held, key=lambda pair: pair[0])]

    def outage(self, method: str, *, rate_limited_for: float, server_errors_for: float, retry_after: int = 1) -> None:
        """From now on `method` answers 429 with Retry-After for `rate_limited_for` seconds, then HTTP 503
        for `server_errors_for` seconds, then works again."""
        self._outages[method] = (time.monotonic(), rate_limited_for, server_errors_for, retry_after)

    def _outage_answer(self, method: str) -> ScriptedAnswer | None:
        if method not in self._outages:
            return None
        start, limited, errors, retry_after = self._outages[method]
        elapsed = time.monotonic() - start
        if elapsed < limited:
            return ScriptedAnswer(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)})
        if elapsed < limited + errors:
            return ScriptedAnswer(503, {"ok": False, "error": "service_unavailable"})
        del self._outages[method]
        return None

    def calls_to(self, method: str) -> list[SlackCall]:
        return [call for call in self.calls if call.method == method]

    def delivered_posts(self) -> list[dict[str, Any]]:
        """Arguments of the chat.postMessage calls that were answered ok."""
        return [c.args for c in self.calls_to("chat.postMessage") if c.status == 200 and c.error is None]

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(condition), timeout)

    async def send_envelope(self, envelope: dict[str, Any]) -> None:
        for socket in list(self._sockets):
            await socket.send_json(envelope)

    async def socket_outage(self) -> None:
        """Socket Mode goes away: every open websocket is closed and new handshakes are refused
        until `socket_down` is set back to False."""
        self.socket_down = True
        for socket in list(self._sockets):
            await socket.close()

    # -- lifecycle -------------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{name}", self._response_url)
        app.router.add_get("/link", self._link)
        return app

    async def before_close(self) -> None:
        for socket in list(self._sockets):
            await socket.close()

    # -- handlers --------------------------------------------------------------------------------

    async def _record(self, call: SlackCall) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        received_at = time.monotonic()
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            args.update(await request.json())
        elif request.can_read_body:
            args.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        if method == "users.info" and (delay := self.slow_users.get(str(args.get("user")))):
            await asyncio.sleep(delay)
        if method == "users.info" and (held := self.held_users.get(str(args.get("user")))):
            await held.wait()
        if (rule := self.kill_on) is not None and rule.method == method and rule.match(args):
            self.kill_on = None
            if rule.after_doing:
                self._answer(method, args)
            os.kill(rule.pid, signal.SIGKILL)
            async with self._changed:
                self.killed += 1
                self._changed.notify_all()
            return web.json_response({"ok": False, "error": "fatal_error"}, status=500)  # nobody reads it
        scripted = self._scripted[method].popleft() if self._scripted[method] else self._outage_answer(method)
        if scripted is None and str(args.get("channel")) in self.missing_channels:
            scripted = ScriptedAnswer(200, {"ok": False, "error": "channel_not_found"})
        if scripted is None and method == "chat.postMessage":
            text = str(args.get("text") or "")
            if refusal := next((error for held, error in self.refused_texts.items() if held in text), None):
                scripted = ScriptedAnswer(200, {"ok": False, "error": refusal})
        if scripted is not None and scripted.done_anyway:
            done = self._answer(method, args)
            if (held_until := scripted.held_until) is not None:
                async with self._changed:
                    self._changed.notify_all()  # the message is there for wait_until to see
                await held_until.wait()
                scripted = ScriptedAnswer(200, done)
        if scripted is not None and scripted.then is not None:
            scripted.then()
        answer = scripted or ScriptedAnswer(200, self._answer(method, args))
        error = None if answer.body.get("ok") else str(answer.body.get("error"))
        call = SlackCall(method, args, dict(request.headers), answer.status, error, answer.body, received_at)
        call.answered_at = time.monotonic()
        await self._record(call)
        return web.json_response(answer.body, status=answer.status, headers=answer.headers)

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://fake.slack.com/",
                "team": "Fake Team",
                "user": "roundtable",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            # A channel may be named ("news"): Slack posts in the channel of that name and answers with its
            # ID (https://docs.slack.dev/reference/methods/chat.postMessage, `channel` "an encoded ID or name").
            by_name = {name: id_ for id_, name in self.channel_names.items()}
            args = {**args, "channel": by_name.get(str(args.get("channel")).lstrip("#"), args.get("channel"))}
            ts = self._next_ts()
            message = {
                "type": "message",
                "subtype": "bot_message",
                "text": args.get("text"),
                "ts": ts,
                "bot_id": BOT_ID,
                "username": args.get("username"),
            }
            if args.get("thread_ts"):
                message["thread_ts"] = str(args["thread_ts"])
            if isinstance(args.get("metadata"), dict):
                message["metadata"] = args["metadata"]
            self.messages[(str(args.get("channel")), ts)] = message
            return {"ok": True, "channel": args.get("channel"), "ts": ts, "message": _shown(message, False)}
        if method == "conversations.history":
            return {"ok": True, **self._history(args, thread=None)}
        if method == "conversations.replies":
            parent = self.messages.get((str(args.get("channel")), str(args.get("ts"))))
            if not parent:
                return {"ok": False, "error": "thread_not_found"}
            page = self._history(args, thread=str(args["ts"]))
            first = [] if args.get("cursor") else [parent]  # the parent opens the first page
            return {"ok": True, **page, "messages": [*first, *page["messages"]]}
        if method == "chat.delete":
            # https://docs.slack.dev/reference/methods/chat.delete: channel (an ID) and ts; a bot token deletes only
            # that bot's messages; the answer names both, or says message_not_found.
            key = (str(args.get("channel")), str(args.get("ts")))
            if key not in self.messages:
                return {"ok": False, "error": "message_not_found"}
            if not self.messages[key].get("bot_id"):
                return {"ok": False, "error": "cant_delete_message"}
            del self.messages[key]
            return {"ok": True, "channel": key[0], "ts": key[1]}
        if method == "chat.update":
            if known := self.messages.get((str(args.get("channel")), str(args.get("ts")))):
                known.update({k: args[k] for k in ("text", "blocks") if k in args})  # edited in place
            # The answer carries the edited message (https://docs.slack.dev/reference/methods/chat.update).
            edited = _shown(known, False) if known else {"type": "message", "text": args.get("text")}
            answer = {"ok": True, "channel": args.get("channel"), "ts": args.get("ts"), "text": args.get("text")}
            return {**answer, "message": edited}
        if method == "views.open":
            view = args.get("view")
            return {"ok": True, "view": {**(view if isinstance(view, dict) else {}), "id": f"V{self._next_ts()[-6:]}"}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "users.info":
            user = str(args.get("user"))
            name = self.user_names.get(user, user.lower())
            profile = {"display_name": name, "real_name": name}
            owner = user in self.owners
            user_record = {
                "id": user,
                "team_id": self.user_teams.get(user, TEAM_ID),
                "name": name.lower(),
                "real_name": name,
                "deleted": False,
                "is_admin": user in self.admins or owner,  # Slack marks owners as admins too
                "is_owner": owner,
                "is_primary_owner": owner and user == min(self.owners),
                "is_restricted": False,
                "is_ultra_restricted": False,
                "is_bot": False,
                "is_app_user": False,
                "profile": profile,
            }
            return {"ok": True, "user": user_record}
        if method == "apps.connections.open":
            return {"ok": True, "url": self.ws_url}
        if method == "conversations.list":
            # https://docs.slack.dev/reference/methods/conversations.list: limit (at most 1000), cursor.
            start = int(str(args.get("cursor") or "0").removeprefix("at:") or 0)
            limit = min(int(args.get("limit") or 100), 1000)
            named = [{"id": id_, "name": name, "is_channel": True} for id_, name in self.channel_names.items()]
            more = start + limit < len(named)
            metadata = {"next_cursor": f"at:{start + limit}" if more else ""}
            return {"ok": True, "channels": named[start : start + limit], "response_metadata": metadata}
        if method == "conversations.open":
            # The app's direct message with a user: a D… id, the same each time
            # (https://docs.slack.dev/reference/methods/conversations.open).
            users = str(args.get("users") or "")
            if "," in users or not users.startswith(("U", "W")):
                return {"ok": False, "error": "user_not_found"}
            return {"ok": True, "channel": {"id": self.direct_message_with(users)}}
        return {"ok": True}

    def _history(self, args: dict[str, Any], thread: str | None) -> dict[str, Any]:
        """A page of the channel's messages (or a thread's replies) between `oldest` and `latest` (the bounds
        themselves only with `inclusive`), newest first as Slack orders them, at most `limit` (and at most
        `page_limit`), with has_more and, when there is more, the cursor of the next page (which goes on
        below the page's oldest message: https://docs.slack.dev/apis/web-api/pagination)."""
        channel = str(args.get("channel"))
        oldest, latest = float(args.get("oldest") or 0), float(args.get("latest") or "inf")
        inclusive = _flag(args.get("inclusive"))
        up_to_latest = inclusive
        cursor = str(args.get("cursor") or "")
        if cursor.startswith("below:"):
            latest, up_to_latest = min(latest, float(cursor.removeprefix("below:"))), False

        def within(ts: float) -> bool:
            above = oldest <= ts if inclusive else oldest < ts
            return above and (ts <= latest if up_to_latest else ts < latest)

        found = [
            _shown(message, _flag(args.get("include_all_metadata")))
            for (where, ts), message in self.messages.items()
            if where == channel and within(float(ts)) and message.get("thread_ts") == thread and ts != thread
        ]
        found.sort(key=lambda message: float(message["ts"]), reverse=True)
        limit = min(int(args.get("limit") or self.page_limit), self.page_limit)
        page, more = found[:limit], len(found) > limit
        answer: dict[str, Any] = {"messages": page, "has_more": more}
        answer["response_metadata"] = {"next_cursor": f"below:{page[-1]['ts']}" if more else ""}
        return answer

    def _next_ts(self) -> str:
        """A message's ts: the time Slack took it, in microseconds, unique and increasing within a channel
        (https://docs.slack.dev/messaging/retrieving-messages: "ts" is the message's unique id and its time);
        this fake keeps it unique across channels."""
        self._ts = max(int(time.time() * 1_000_000), self._ts + 1)
        return f"{self._ts // 1_000_000}.{self._ts % 1_000_000:06d}"

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        await self._record(
            SlackCall("response_url", {"name": request.match_info["name"], **body}, dict(request.headers))
        )
        return web.Response(text="ok")

    async def _link(self, request: web.Request) -> web.StreamResponse:
        if self.socket_down:
            async with self._changed:
                self.socket_refusals += 1
                self._changed.notify_all()
            return web.Response(status=503, text="upstream connect error")
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        async with self._changed:
            self.socket_connections += 1
            self._changed.notify_all()
        await socket.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": APP_ID},
                "debug_info": {"host": "fake"},
            }
        )
        try:
            async for message in socket:
                if message.type == WSMsgType.TEXT:
                    async with self._changed:
                        self.socket_replies.append(json.loads(message.data))
                        self._changed.notify_all()
        finally:
            self._sockets.remove(socket)
            async with self._changed:
                self.socket_closes += 1
                self._changed.notify_all()
        return socket


def _shown(message: dict[str, Any], metadata: bool) -> dict[str, Any]:
    """A message as Slack returns it: its metadata only when asked for."""
    return message if metadata else {k: v for k, v in message.items() if k != "metadata"}


def _flag(value: Any) -> bool:
    """A boolean argument as Slack reads it from JSON, a form or a query string."""
    return value is True or str(value).lower() in ("1", "true")
