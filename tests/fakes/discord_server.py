"""A fake Discord on 127.0.0.1: the REST routes discord.py calls and a gateway websocket.

Point discord.py at it with `discord_endpoints(fake.api_url, fake.gateway_url)`. The fake records
every REST call, holds the guild from discord_payloads.py, and, like Discord, echoes every message
the bot or a webhook posts back through the gateway as MESSAGE_CREATE (so a bot that answered
bots or webhooks would loop here too). Tests push a user's MESSAGE_CREATE, or an INTERACTION_CREATE
for a slash command, a button click or a submitted form, with `send_message` / `send_slash_command` /
`click_button` / `submit_form`, and wait with `wait_for_calls`. Messages the bot posts through REST
are kept (with their components) in `messages` and edited in place, so a click can carry its message.
Several clients may connect one after another (a restart): events go to the newest connection.

Shards, as Discord does them: IDENTIFY's `shard` [shard_id, num_shards] (absent: [0, 1]) picks the
guilds of `guild_ids` that connection hears, those with (guild_id >> 22) % num_shards == shard_id;
READY lists only those, a GUILD_CREATE follows for each, and every event of a guild (a message, an
interaction, the echo of a post) goes to the newest connection holding its shard; one without a
guild (a DM) goes to shard 0. An impossible shard is closed with 4010 "Invalid shard". GET
/gateway/bot recommends `recommended_shards`.

Posting can fail as on Discord: during an `outage` a message post or webhook execute answers 429
with Retry-After, the JSON body {message, retry_after, global} and the rate-limit headers (and
`Via`, which discord.py looks for before it believes a 429 is Discord's), then HTTP 503; a channel
in `missing_channels` answers 404 Unknown Channel (its webhooks, 404 Unknown Webhook). A message
created with a nonce and enforce_nonce, again within `nonce_seconds` (Discord: "the past few minutes"),
answers the message created first; after that it is created again. A user in `closed_dms` takes no
direct message from the bot (403, 50007).

Gateway: HELLO, then READY and GUILD_CREATE after IDENTIFY, heartbeat ACKs, RESUMED after RESUME.
Frames follow what the client asked for in the query: `compress=zstd-stream` (discord.py when the
zstandard package is installed), `compress=zlib-stream`, or plain JSON text without `compress`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes import discord_payloads as p
from tests.fakes.loopback import LoopbackServer
from tests.fakes.slack_api import KillOn

API_PREFIX = "/api/v10"
MESSAGE_LIMIT = 2000
# A channel holds at most 15 webhooks: creating one more answers 400 with JSON code 30007, "Maximum number of
# webhooks reached (15)" (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json-json-error-codes).
WEBHOOKS_PER_CHANNEL = 15
BODY = web.RequestKey("json_body", object)
_EXECUTE = r"/webhooks/\d+/[^/]+"
_REFUSED_USERNAME = re.compile(r"clyde|discord", re.IGNORECASE)


@dataclass
class RecordedCall:
    method: str
    path: str  # without the /api/v10 prefix, e.g. "/channels/123/messages"
    query: dict[str, str]
    json: Any
    authorization: str | None

    def matches(self, method: str, pattern: str) -> bool:
        return self.method == method and re.fullmatch(pattern, self.path) is not None


class GatewaySession:
    """One websocket connection, encoding frames the way the client asked for."""

    def __init__(self, ws: web.WebSocketResponse, compress: str | None) -> None:
        self.ws = ws
        self.compress = compress
        self.sequence = 0
        self.shard: tuple[int, int] | None = None  # [shard_id, num_shards], once identified
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None
        self._zstd = None
        if compress == "zstd-stream":
            import zstandard

            self._zstd = zstandard.ZstdCompressor().compressobj()
            self._zstd_flush = zstandard.COMPRESSOBJ_FLUSH_BLOCK

    async def send(self, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        if self._zlib is not None:
            await self.ws.send_bytes(self._zlib.compress(raw) + self._zlib.flush(zlib.Z_SYNC_FLUSH))
        elif self._zstd is not None:
            await self.ws.send_bytes(self._zstd.compress(raw) + self._zstd.flush(self._zstd_flush))
        else:
            await self.ws.send_str(raw.decode())

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        self.sequence += 1
        await self.send({"op": 0, "t": event, "s": self.sequence, "d": data})

    def hears(self, guild_id: int | None) -> bool:
        """Whether Discord sends this connection the events of `guild_id` (None: a DM, shard 0)."""
        if self.shard is None or self.ws.closed:
            return False
        shard_id, num_shards = self.shard
        return shard_id == (0 if guild_id is None else p.shard_of(guild_id, num_shards))


@dataclass
class FakeDiscord(LoopbackServer):
    token: str = "fake-bot-token"
    forbid_webhooks: bool = False  # answer webhook list/create with 403 Missing Permissions
    calls: list[RecordedCall] = field(default_factory=list)
    gateway_queries: list[dict[str, str]] = field(default_factory=list)
    identify_payloads: list[dict[str, Any]] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    webhooks: dict[int, dict[str, Any]] = field(default_factory=dict)
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)  # posted by the bot, as last edited
    posts: list[tuple[int, str, str]] = field(default_factory=list)  # (channel, author name, content) created
    history: list[dict[str, Any]] = field(default_factory=list)  # every message the bot or a webhook created
    guilds_sent: int = 0  # connections that got READY and GUILD_CREATE
    guild_ids: tuple[int, ...] = (p.GUILD_ID,)  # the guilds the bot is in
    recommended_shards: int = 1  # what GET /gateway/bot answers
    routed: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)  # (shard_id, event, data)
    gateway_down: bool = False  # refuse the gateway's websocket handshake (503), as during an outage
    gateway_refusals: int = 0  # handshakes refused while down
    _sessions: list[GatewaySession] = field(default_factory=list)  # every connection, oldest first
    _shards_by_session_id: dict[str, tuple[int, int]] = field(default_factory=dict)  # for RESUME
    missing_channels: set[int] = field(default_factory=set)  # deleted channels
    direct_messages: dict[int, int] = field(default_factory=dict)  # user id -> the bot's DM channel with them
    outage_refusals: int = 0  # requests refused by an outage (429 or 503)
    _outage: tuple[float, float, float, float] | None = None  # start, 429 seconds, 503 seconds, retry_after
    # enforce_nonce: "checked for uniqueness in the past few minutes. If another message was created by the
    # same author with the same nonce, that message will be returned" (Create Message,
    # https://discord.com/developers/docs/resources/message#create-message): the bot is the one author here.
    nonce_seconds: float = 180.0
    _nonces: dict[str, tuple[int, float]] = field(default_factory=dict)  # nonce -> message id, when (monotonic)
    closed_dms: set[int] = field(default_factory=set)  # users who take no direct messages from the bot (50007)
    server_errors_in: dict[int, int] = field(default_factory=dict)  # channel -> message posts refused with 503
    # The next this many message posts or webhook executes create their message, then answer 503: a 5xx
    # says nothing of whether the request took effect (https://discord.com/developers/docs/topics/opcodes-and-status-codes#http,
    # "5XX: The server had an error processing your request"), so one may come after the message exists.
    server_errors_after_posting: int = 0
    # The next this many webhook executes answer 503 and create nothing: the other side of the same rule. Execute
    # Webhook takes no nonce (https://discord.com/developers/docs/resources/webhook#execute-webhook; discord-api-spec
    # openapi.json, IncomingWebhookRequestPartial has no nonce field), so nothing here answers a repeat with the first.
    webhook_server_errors: int = 0
    # A client that dies while its request is out (a SIGKILL, a lost network) is not answered; Discord
    # either created the message before (Execute Webhook, https://discord.com/developers/docs/resources/webhook#execute-webhook)
    # or never got it. The next webhook execute creates its message and then waits for this event before it
    # answers (held_after_creating), or waits and then creates nothing, as a request that never arrived
    # (lost_before_creating).
    held_after_creating: asyncio.Event | None = None
    lost_before_creating: asyncio.Event | None = None
    autocomplete_answers: list[list[dict[str, Any]]] = field(default_factory=list)  # the choices of each accepted one
    # When each interaction was sent (time.monotonic(), by id): its first answer must come within
    # INTERACTION_SECONDS, or the token is invalidated and the callback is 10062 Unknown interaction
    # (https://discord.com/developers/docs/interactions/receiving-and-responding#responding-to-an-interaction).
    interactions_sent: dict[str, float] = field(default_factory=dict)
    while_failing: Callable[[], None] | None = None  # what happens in the channel before such a 503 goes back
    # SIGKILL the bot's process when a webhook execute whose JSON body matches arrives (method "execute"),
    # before the message is created or after (it exists, and the process never learns so). Once.
    kill_on: KillOn | None = None
    killed: int = 0  # processes killed by kill_on

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def root(self) -> str:
        return self.root_url

    @property
    def api_url(self) -> str:
        return self.root + API_PREFIX

    @property
    def gateway_url(self) -> str:
        return self.root.replace("http://", "ws://", 1) + "/gateway"

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/gateway", self._gateway)
        api = [
            ("GET", "/users/@me", self._me),
            ("POST", "/users/@me/channels", self._open_dm),
            ("GET", "/users/{user_id}", self._user),
            ("GET", "/oauth2/applications/@me", self._application),
            ("GET", "/gateway", self._gateway_info),
            ("GET", "/gateway/bot", self._gateway_info),
            ("PUT", "/applications/{app_id}/commands", self._overwrite_commands),
            ("GET", "/channels/{channel_id}", self._channel),
            ("GET", "/channels/{channel_id}/webhooks", self._list_webhooks),
            ("POST", "/channels/{channel_id}/webhooks", self._create_webhook),
            ("POST", "/channels/{channel_id}/messages", self._create_message),
            ("GET", "/channels/{channel_id}/messages", self._channel_messages),
            ("POST", "/channels/{channel_id}/typing", self._typing),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message),
            ("POST", "/webhooks/{webhook_id}/{webhook_token}", self._execute_webhook),
            ("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}", self._edit_followup),
            ("DELETE", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}", self._delete_webhook_message),
            ("POST", "/interactions/{interaction_id}/{interaction_token}/callback", self._interaction_callback),
        ]
        for method, path, handler in api:
            app.router.add_route(method, API_PREFIX + path, handler)
        return app

    async def before_close(self) -> None:
        for session in self._sessions:
            if not session.ws.closed:
                await session.ws.close()

    # -- what tests use -----------------------------------------------------------------------

    async def gateway_outage(self) -> None:
        """The gateway goes away: every open session is closed (4000, which a client resumes after)
        and new handshakes are refused until `gateway_down` is set back to False."""
        self.gateway_down = True
        for session in self._sessions:
            if not session.ws.closed:
                await session.ws.close(code=4000, message=b"Unknown error")

    def outage(self, *, rate_limited_for: float, server_errors_for: float, retry_after: float = 1.0) -> None:
        """From now on, posts, edits and reads of messages answer 429 for `rate_limited_for` seconds, then 503
        for `server_errors_for` (counted in `outage_refusals`)."""
        self._outage = (time.monotonic(), rate_limited_for, server_errors_for, retry_after)

    def _outage_answer(self) -> web.Response | None:
        if self._outage is None:
            return None
        start, limited, errors, retry_after = self._outage
        elapsed = time.monotonic() - start
        if elapsed < limited + errors:
            self.outage_refusals += 1
        if elapsed < limited:
            # openapi.json, RatelimitedResponse: an Error (code, message) with retry_after and global.
            body = {"code": 0, "message": "You are being rate limited.", "retry_after": retry_after, "global": False}
            headers = {
                "Retry-After": str(retry_after),
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": str(retry_after),
                "X-RateLimit-Bucket": "fake-messages",
                "X-RateLimit-Scope": "user",
                "Via": "1.1 google",
            }
            response = _json(body, status=429)
            response.headers.update(headers)
            return response
        if elapsed < limited + errors:
            return _error(503, 0, "503: Service Unavailable")
        self._outage = None
        return None

    async def wait_until_guild_sent(self, timeout: float = 10, *, count: int = 1) -> None:
        """Until `count` connections (one per client start) have identified and received READY and GUILD_CREATE."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.guilds_sent < count:
            if loop.time() > deadline:
                raise TimeoutError(f"{self.guilds_sent} of {count} clients connected")
            await asyncio.sleep(0.01)

    def connected_shards(self) -> set[int]:
        """The shard ids of the connections that identified and are still open."""
        return {s.shard[0] for s in self._sessions if s.shard is not None and not s.ws.closed}

    async def send_message(
        self,
        content: str,
        *,
        channel_id: int = p.TEXT_CHANNEL_ID,
        author: dict[str, Any] | None = None,
        webhook_id: int | None = None,
        mentions: list[dict[str, Any]] | None = None,
    ) -> int:
        """A MESSAGE_CREATE, by default from the human member in #general. Returns the message id."""
        message = p.message(channel_id, content, author=author or p.human(), webhook_id=webhook_id, mentions=mentions)
        await self._dispatch("MESSAGE_CREATE", message)
        return int(message["id"])

    async def send_reaction(self, message_id: int, emoji: str | None, **fields: Any) -> bool:
        """A person's reaction on a message (p.reaction's fields: removed=True for MESSAGE_REACTION_REMOVE).
        Sent only to a client that identified with the GUILD_MESSAGE_REACTIONS intent (1 << 10), as
        Discord sends an event only to the intents asked for
        (https://discord.com/developers/docs/events/gateway#gateway-intents). Whether it was sent."""
        data = p.reaction(message_id, emoji, **fields)
        if not self.identify_payloads or not int(self.identify_payloads[-1].get("intents", 0)) & (1 << 10):
            return False
        await self._dispatch("MESSAGE_REACTION_REMOVE" if fields.get("removed") else "MESSAGE_REACTION_ADD", data)
        return True

    async def send_slash_command(
        self,
        name: str,
        options: dict[str, Any],
        *,
        channel_id: int = p.TEXT_CHANNEL_ID,
        permissions: int = p.MEMBER_PERMISSIONS | p.MANAGE_CHANNELS,
        roles: list[int] | None = None,
        user: p.Payload | None = None,
    ) -> int:
        """An INTERACTION_CREATE of type 2 for a command the bot registered (typed by `user`, Ana unless
        given). Returns the interaction id."""
        command = next((c for c in self.commands if c["name"] == name), None)
        if command is None:
            raise AssertionError(f"/{name} was never registered; registered: {[c['name'] for c in self.commands]}")
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        interaction_id = p.snowflake()
        interaction = p.slash_command_interaction(
            interaction_id,
            f"interaction-token-{interaction_id}",
            command_id=int(command["id"]),
            name=name,
            options=[{"name": k, "type": types[k], "value": v} for k, v in options.items()],
            channel_id=channel_id,
            permissions=permissions,
            roles=roles or [],
            user=user,
        )
        await self._dispatch("INTERACTION_CREATE", interaction)
        return interaction_id

    async def send_autocomplete(
        self, name: str, options: dict[str, Any], focused: str, *, channel_id: int = p.TEXT_CHANNEL_ID
    ) -> int:
        """An INTERACTION_CREATE of type 4 (APPLICATION_COMMAND_AUTOCOMPLETE) while `focused` is being typed:
        its value is what was typed so far. Returns the interaction id; its callback is in `autocomplete_answers`."""
        command = next(c for c in self.commands if c["name"] == name)
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        interaction_id = p.snowflake()
        typed = [
            {"name": k, "type": types[k], "value": v, **({"focused": True} if k == focused else {})}
            for k, v in options.items()
        ]
        data = {"id": command["id"], "name": name, "type": 1, "options": typed}
        by = p.member(p.human(), [], permissions=p.MEMBER_PERMISSIONS)
        interaction = p.interaction(
            interaction_id, f"interaction-token-{interaction_id}", 4, data, channel_id=channel_id, member_payload=by
        )
        await self._dispatch("INTERACTION_CREATE", interaction)
        return interaction_id

    async def click_button(
        self,
        message_id: int,
        custom_id: str,
        *,
        clicker: dict[str, Any] | None = None,
        as_seen: dict[str, Any] | None = None,
    ) -> int:
        """A click on a button of a message the bot posted, by default by the human member. `as_seen` is the
        message as the clicker's Discord still shows it (buttons since removed). Returns the interaction id."""
        message = as_seen or self.messages[message_id]
        ids = [c.get("custom_id") for row in message["components"] for c in row.get("components", [])]
        assert custom_id in ids, f"message {message_id} has no button {custom_id!r}, only {ids}"
        interaction_id = p.snowflake()
        token = f"interaction-token-{interaction_id}"
        payload = p.button_interaction(
            interaction_id, token, message_payload=message, custom_id=custom_id, clicker=clicker or p.human()
        )
        await self._dispatch("INTERACTION_CREATE", payload)
        return interaction_id

    async def submit_form(
        self,
        custom_id: str,
        values: dict[str, str],
        *,
        channel_id: int = p.TEXT_CHANNEL_ID,
        clicker: dict[str, Any] | None = None,
    ) -> int:
        """A submitted modal (the form the bot opened with callback type 9). Returns the interaction id."""
        interaction_id = p.snowflake()
        payload = p.modal_submit_interaction(
            interaction_id,
            f"interaction-token-{interaction_id}",
            custom_id=custom_id,
            values=values,
            channel_id=channel_id,
            clicker=clicker or p.human(),
        )
        await self._dispatch("INTERACTION_CREATE", payload)
        return interaction_id

    def find_calls(
        self, method: str, pattern: str, where: Callable[[RecordedCall], bool] = lambda c: True
    ) -> list[RecordedCall]:
        return [c for c in self.calls if c.matches(method, pattern) and where(c)]

    async def wait_for_calls(
        self,
        method: str,
        pattern: str,
        count: int = 1,
        *,
        where: Callable[[RecordedCall], bool] = lambda c: True,
        timeout: float = 10,
    ) -> list[RecordedCall]:
        """Poll the record until `count` calls match (method, full-match path regex, predicate)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = self.find_calls(method, pattern, where)
            if len(found) >= count:
                return found
            if loop.time() > deadline:
                seen = "\n".join(f"  {c.method} {c.path} {c.json}" for c in self.calls)
                raise AssertionError(f"wanted {count} x {method} {pattern}, got {len(found)}; calls:\n{seen}")
            await asyncio.sleep(0.01)

    def webhook_executes(self) -> list[RecordedCall]:
        """Executes of channel webhooks, i.e. persona posts (interaction followups excluded)."""
        return self.find_calls("POST", _EXECUTE, _is_channel_webhook)

    async def wait_for_webhook_executes(self, count: int = 1, *, timeout: float = 10) -> list[RecordedCall]:
        return await self.wait_for_calls("POST", _EXECUTE, count, where=_is_channel_webhook, timeout=timeout)

    # -- gateway ------------------------------------------------------------------------------

    def _session_for(self, guild_id: int | None) -> GatewaySession | None:
        return next((s for s in reversed(self._sessions) if s.hears(guild_id)), None)

    async def _dispatch(self, event: str, data: dict[str, Any], timeout: float = 10) -> None:
        """Send `event` to the connection holding its guild's shard, waiting for one to connect."""
        await self.wait_until_guild_sent()
        if event == "INTERACTION_CREATE":
            self.interactions_sent[str(data["id"])] = time.monotonic()
        guild_id = int(data["guild_id"]) if data.get("guild_id") else None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (session := self._session_for(guild_id)) is None:
            if loop.time() > deadline:
                raise TimeoutError(f"no connection holds the shard of guild {guild_id}")
            await asyncio.sleep(0.01)
        await self._send_routed(session, event, data)

    async def _send_routed(self, session: GatewaySession, event: str, data: dict[str, Any]) -> None:
        assert session.shard is not None
        self.routed.append((session.shard[0], event, data))
        await session.dispatch(event, data)

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        if self.gateway_down:
            self.gateway_refusals += 1
            return web.Response(status=503, text="upstream connect error")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.gateway_queries.append(dict(request.query))
        session = GatewaySession(ws, request.query.get("compress"))
        self._sessions.append(session)
        await session.send({"op": 10, "d": {"heartbeat_interval": 41_250}})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            message = json.loads(frame.data)
            op, data = message.get("op"), message.get("d")
            if op == 1:
                await session.send({"op": 11})
            elif op == 2:
                self.identify_payloads.append(data)
                if data.get("token") != self.token:
                    await ws.close(code=4004, message=b"Authentication failed.")
                    break
                shard_id, num_shards = data.get("shard") or (0, 1)
                if not 0 <= shard_id < num_shards:
                    await ws.close(code=4010, message=b"Invalid shard.")
                    break
                guilds = tuple(g for g in self.guild_ids if p.shard_of(g, num_shards) == shard_id)
                session_id = secrets.token_hex(8)
                self._shards_by_session_id[session_id] = (shard_id, num_shards)
                ready = p.ready(session_id, self.gateway_url, guild_ids=guilds, shard=(shard_id, num_shards))
                await session.dispatch("READY", ready)
                for guild_id in guilds:
                    await session.dispatch("GUILD_CREATE", p.guild_create(guild_id))
                session.shard = (shard_id, num_shards)
                self.guilds_sent += 1
            elif op == 6:
                session.shard = self._shards_by_session_id.get(data.get("session_id"), (0, 1))
                await session.dispatch("RESUMED", {})
        return ws

    # -- REST ---------------------------------------------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX):
            return await handler(request)
        path = request.path.removeprefix(API_PREFIX)
        body = await request.json() if request.can_read_body and request.content_type == "application/json" else None
        auth = request.headers.get("Authorization")
        self.calls.append(RecordedCall(request.method, path, dict(request.query), body, auth))
        request[BODY] = body
        # Webhook executes and interaction callbacks carry their token in the path, not a bot token.
        if not path.startswith(("/webhooks/", "/interactions/")) and auth != f"Bot {self.token}":
            return _error(401, 0, "401: Unauthorized")
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return _error(404, 0, "404: Not Found")

    async def _me(self, request: web.Request) -> web.Response:
        return _json(p.bot_user())

    async def _user(self, request: web.Request) -> web.Response:
        user_id = int(request.match_info["user_id"])
        known = {p.HUMAN_USER_ID: "Ana", p.OWNER_USER_ID: "Owner"}
        return _json(p.user(user_id, known[user_id])) if user_id in known else _error(404, 10013, "Unknown User")

    async def _open_dm(self, request: web.Request) -> web.Response:
        """Create DM: one direct-message channel per recipient, kept in `direct_messages`."""
        recipient = int(request[BODY]["recipient_id"])
        channel_id = self.direct_messages.setdefault(recipient, p.snowflake())
        dm = {"id": str(channel_id), "type": 1, "last_message_id": None, "recipients": [p.user(recipient, "Ana")]}
        return _json(dm)

    async def _application(self, request: web.Request) -> web.Response:
        return _json(p.application())

    async def _gateway_info(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": self.recommended_shards, "session_start_limit": limit})

    async def _overwrite_commands(self, request: web.Request) -> web.Response:
        self.commands = [
            {**command, "id": str(p.snowflake()), "application_id": str(p.APPLICATION_ID), "version": "1"}
            for command in request[BODY]
        ]
        return _json(self.commands)

    async def _channel(self, request: web.Request) -> web.Response:
        if int(request.match_info["channel_id"]) in self.missing_channels:
            return _error(404, 10003, "Unknown Channel")
        channel = p.channels_by_id().get(int(request.match_info["channel_id"]))
        return _json(channel) if channel else _error(404, 10003, "Unknown Channel")

    async def _list_webhooks(self, request: web.Request) -> web.Response:
        if int(request.match_info["channel_id"]) in self.missing_channels:
            return _error(404, 10003, "Unknown Channel")
        if self.forbid_webhooks:
            return _error(403, 50013, "Missing Permissions")
        channel_id = request.match_info["channel_id"]
        return _json([w for w in self.webhooks.values() if w["channel_id"] == channel_id])

    async def _create_webhook(self, request: web.Request) -> web.Response:
        if self.forbid_webhooks:
            return _error(403, 50013, "Missing Permissions")
        channel_id = int(request.match_info["channel_id"])
        if channel_id not in p.channels_by_id() or channel_id == p.THREAD_ID:
            return _error(400, 50024, "Cannot execute action on this channel type")
        if sum(int(w["channel_id"]) == channel_id for w in self.webhooks.values()) >= WEBHOOKS_PER_CHANNEL:
            return _error(400, 30007, "Maximum number of webhooks reached (15)")
        webhook_id = p.snowflake()
        self.webhooks[webhook_id] = p.webhook(webhook_id, secrets.token_urlsafe(16), channel_id, request[BODY]["name"])
        return _json(self.webhooks[webhook_id])

    def add_others_webhooks(self, channel_id: int, count: int) -> None:
        """Webhooks another app or a person made in the channel (not the bot's: it cannot use them)."""
        for _ in range(count):
            webhook_id = p.snowflake()
            made = p.webhook(webhook_id, secrets.token_urlsafe(16), channel_id, "Someone else's")
            self.webhooks[webhook_id] = {**made, "user": p.human(), "application_id": None}

    async def _typing(self, request: web.Request) -> web.Response:
        return web.Response(status=204)  # "Trigger Typing Indicator": recorded like every call

    async def _create_message(self, request: web.Request) -> web.Response:
        body = request[BODY]
        channel_id = int(request.match_info["channel_id"])
        if channel_id in self.missing_channels:
            return _error(404, 10003, "Unknown Channel")
        if (refused := self._outage_answer()) is not None:
            return refused
        if problem := _content_problem(body):
            return problem
        if channel_id in {dm for user, dm in self.direct_messages.items() if user in self.closed_dms}:
            return _error(403, 50007, "Cannot send messages to this user")
        if self.server_errors_in.get(channel_id):
            self.server_errors_in[channel_id] -= 1
            return _error(503, 0, "503: Service Unavailable")
        nonce = str(body["nonce"]) if body.get("nonce") is not None else None
        first = self._nonces.get(nonce) if nonce else None
        if first and body.get("enforce_nonce") and time.monotonic() - first[1] < self.nonce_seconds:
            return _json(self.messages[first[0]])  # the same nonce again: the message it created, no new one
        message = p.message(channel_id, body.get("content", ""), author=p.bot_user(), components=body.get("components"))
        self.messages[int(message["id"])] = message
        if nonce:
            self._nonces[nonce] = (int(message["id"]), time.monotonic())
        self.posts.append((channel_id, p.bot_user()["username"], message["content"]))
        self.history.append(message)
        await self._echo(message)
        return self._posted_but_failed() or _json(message)

    async def _channel_messages(self, request: web.Request) -> web.Response:
        """Get Channel Messages (openapi.json, GET /channels/{channel_id}/messages: before, after, limit 1-100,
        50 by default), newest first: the newest `limit` before `before` (or of all), or with `after` the
        `limit` messages that come right after it."""
        channel_id = int(request.match_info["channel_id"])
        if channel_id in self.missing_channels:
            return _error(404, 10003, "Unknown Channel")
        if (refused := self._outage_answer()) is not None:
            return refused
        limit = int(request.query.get("limit", 50))
        if not 1 <= limit <= 100:
            return _json({"code": 50035, "message": "Invalid Form Body", "errors": _field_error("limit")}, 400)
        found = sorted((m for m in self.history if int(m["channel_id"]) == channel_id), key=lambda m: int(m["id"]))
        if "after" in request.query:
            after = int(request.query["after"])
            return _json(list(reversed([m for m in found if int(m["id"]) > after][:limit])))
        before = int(request.query.get("before", 0)) or None
        newest_first = [m for m in reversed(found) if before is None or int(m["id"]) < before]
        return _json(newest_first[:limit])

    async def _edit_message(self, request: web.Request) -> web.Response:
        message = self.messages.get(int(request.match_info["message_id"]))
        if message is None or message["channel_id"] != request.match_info["channel_id"]:
            return _error(404, 10008, "Unknown Message")
        if (refused := self._outage_answer()) is not None:
            return refused
        body = request[BODY] or {}
        if "content" in body and (problem := _content_problem(body)):
            return problem
        message.update({k: v for k, v in body.items() if k in ("content", "components")})
        message["edited_timestamp"] = p.now_timestamp()
        return _json(message)

    async def _execute_webhook(self, request: web.Request) -> web.StreamResponse:
        body = request[BODY]
        webhook_id = int(request.match_info["webhook_id"])
        if webhook_id == p.APPLICATION_ID:  # an interaction followup
            return _json(self._followup_message(body))
        webhook = self.webhooks.get(webhook_id)
        if webhook is None or webhook["token"] != request.match_info["webhook_token"]:
            return _error(404, 10015, "Unknown Webhook")
        if int(webhook["channel_id"]) in self.missing_channels:  # deleted with its channel
            return _error(404, 10015, "Unknown Webhook")
        if (refused := self._outage_answer()) is not None:
            return refused
        if problem := _content_problem(body):
            return problem
        if self.webhook_server_errors > 0:
            self.webhook_server_errors -= 1
            return _error(503, 0, "503: Service Unavailable")
        if (lost := self.lost_before_creating) is not None:
            self.lost_before_creating = None
            await lost.wait()
            return _error(503, 0, "503: Service Unavailable")  # to a client that is gone: nothing was created
        username = body.get("username") or webhook["name"]
        if _REFUSED_USERNAME.search(username) or len(username) > 80:
            return _json({"code": 50035, "message": "Invalid Form Body", "errors": _field_error("username")}, 400)
        # openapi.json, IncomingWebhookRequestPartial: avatar_url is a URI of at most 2048 characters.
        if len(body.get("avatar_url") or "") > 2048:
            return _json({"code": 50035, "message": "Invalid Form Body", "errors": _field_error("avatar_url")}, 400)
        channel_id = int(request.query.get("thread_id") or webhook["channel_id"])
        author = {**p.user(webhook_id, username, bot=True), "discriminator": "0000"}
        message = p.message(channel_id, body.get("content", ""), author=author, webhook_id=webhook_id)
        if (rule := self.kill_on) is not None and rule.method == "execute" and rule.match(body):
            self.kill_on = None
            if rule.after_doing:
                self.posts.append((channel_id, username, message["content"]))
                self.history.append(message)
            os.kill(rule.pid, signal.SIGKILL)
            self.killed += 1
            return _error(500, 0, "500: Internal Server Error")  # nobody reads it
        self.posts.append((channel_id, username, message["content"]))
        self.history.append(message)
        await self._echo(message)
        if failed := self._posted_but_failed():
            return failed
        if (held := self.held_after_creating) is not None:
            self.held_after_creating = None
            await held.wait()
        if request.query.get("wait") in ("1", "true", "True"):
            return _json(message)
        return web.Response(status=204)

    def _posted_but_failed(self) -> web.Response | None:
        if self.server_errors_after_posting <= 0:
            return None
        self.server_errors_after_posting -= 1
        if self.while_failing is not None:
            self.while_failing()
        return _error(503, 0, "503: Service Unavailable")

    def someone_says(self, channel_id: int, content: str) -> None:
        """A person's message in the channel, which Get Channel Messages lists (no gateway event)."""
        self.history.append(p.message(channel_id, content, author=p.user(p.HUMAN_USER_ID, "ana")))

    async def _delete_webhook_message(self, request: web.Request) -> web.Response:
        """Delete Webhook Message (https://discord.com/developers/docs/resources/webhook#delete-webhook-message):
        a message that webhook created, in the channel or the `thread_id` thread; 204 No Content."""
        webhook = self.webhooks.get(int(request.match_info["webhook_id"]))
        if webhook is None or webhook["token"] != request.match_info["webhook_token"]:
            return _error(404, 10015, "Unknown Webhook")
        message_id = request.match_info["message_id"]
        made = [m for m in self.history if m["id"] == message_id and m.get("webhook_id") == str(webhook["id"])]
        if not made:
            return _error(404, 10008, "Unknown Message")
        self.history.remove(made[0])
        return web.Response(status=204)

    async def _edit_followup(self, request: web.Request) -> web.Response:
        return _json(self._followup_message(request[BODY]))

    async def _interaction_callback(self, request: web.Request) -> web.Response:
        body = request[BODY]
        sent = self.interactions_sent.get(request.match_info["interaction_id"])
        if sent is not None and time.monotonic() - sent > INTERACTION_SECONDS:
            return _error(404, 10062, "Unknown interaction")
        if body.get("type") == 8 and (problem := _autocomplete_problem(body.get("data") or {})):
            return problem
        if body.get("type") == 8:
            self.autocomplete_answers.append(body["data"].get("choices") or [])
        flags = (body.get("data") or {}).get("flags", 0)
        interaction = {
            "id": request.match_info["interaction_id"],
            "type": 2,
            "response_message_loading": body["type"] == 5,
            "response_message_ephemeral": bool(flags & 64),
        }
        return _json({"interaction": interaction, "resource": {"type": body["type"]}})

    def _followup_message(self, body: dict[str, Any]) -> dict[str, Any]:
        message = p.message(p.TEXT_CHANNEL_ID, body.get("content", ""), author=p.bot_user())
        return {**message, "flags": body.get("flags", 0), "webhook_id": str(p.APPLICATION_ID)}

    async def _echo(self, message: dict[str, Any]) -> None:
        session = self._session_for(int(message["guild_id"]) if message.get("guild_id") else None)
        if session is not None:
            await self._send_routed(session, "MESSAGE_CREATE", message)


def _is_channel_webhook(call: RecordedCall) -> bool:
    return call.path.split("/")[2] != str(p.APPLICATION_ID)


def _content_problem(body: dict[str, Any] | None) -> web.Response | None:
    content = (body or {}).get("content") or ""
    if len(content) > MESSAGE_LIMIT:
        return _error(400, 50035, f"Invalid Form Body (content: must be {MESSAGE_LIMIT} or fewer in length)")
    if not content.strip():
        return _error(400, 50006, "Cannot send an empty message")
    return None


def _autocomplete_problem(data: dict[str, Any]) -> web.Response | None:
    """An autocomplete answer Discord refuses whole (openapi.json: InteractionApplicationCommandAutocomplete-
    CallbackStringData.choices maxItems 25; ApplicationCommandOptionStringChoice.name 1 to 100 characters)."""
    choices = data.get("choices") or []
    errors: dict[str, Any] = {}
    if len(choices) > 25:
        errors["choices"] = {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 25 or fewer in length."}]}
    for index, choice in enumerate(choices):
        if not 1 <= len(str(choice.get("name", ""))) <= 100:
            bad = {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH", "message": "Must be between 1 and 100 in length."}]}
            errors.setdefault("choices", {})[str(index)] = {"name": bad}
    if not errors:
        return None
    return _json({"code": 50035, "message": "Invalid Form Body", "errors": {"data": errors}}, 400)


def _field_error(name: str) -> dict[str, Any]:
    """The `errors` of a 50035 Invalid Form Body (openapi.json, ErrorResponse.errors: InnerErrors per field)."""
    return {name: {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH", "message": "Must be within the allowed length."}]}}


def _json(data: Any, status: int = 200) -> web.Response:
    # Exactly "application/json": discord.py only parses a body whose content type is exactly that.
    return web.Response(body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"})


INTERACTION_SECONDS = 3.0  # an interaction's first answer, at most this long after it was sent


def _error(status: int, code: int, message: str) -> web.Response:
    return _json({"code": code, "message": message}, status=status)
