"""A fake of the OpenAI Chat Completions API (`POST /v1/chat/completions`) on 127.0.0.1.

Give the SDK `base_url=<fake.url>/v1`. The fake records every request, can answer the next N
requests with a 429 rate-limit error and otherwise replies with the next queued answer (text
and/or a tool call, see `queue`) or else `reply_text`. `let_through(n)` makes it answer only n more
requests and keep the others waiting, as a slow model does, until `let_through(None)`; a request
whose client went away meanwhile takes no answer.

A reasoning model name (o-series, gpt-5 and later except -chat) is treated as OpenAI treats one: a
request with `max_tokens`, or with a temperature other than the default 1, is refused with a 400
`unsupported_parameter` / `unsupported_value` error, and usage reports reasoning tokens.

With `context_tokens` set, the fake is a llama.cpp server with that context window (llama-server's
`--ctx-size`): a request whose prompt is longer (estimated at 4 characters a token) is refused with
its 400 `exceed_context_size_error`, which names the prompt's tokens and the window
(tools/server/server.cpp's error types; the body as llama-server sends it:
`{"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096
tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4476,
"n_ctx": 4096}}`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

REASONING_TOKENS = 7  # reasoning tokens a reasoning model's reply reports
Calls = dict[str, Any] | list[dict[str, Any]] | None  # a reply's tool calls: one, several, or none


def is_reasoning_model(model: str) -> bool:
    return bool(re.match(r"^(o\d|gpt-5(?!.*-chat)|gpt-[6-9])", model.lower()))


def _refusal(body: dict[str, Any]) -> dict[str, Any] | None:
    """The 400 error body OpenAI answers a reasoning model's request with, if it breaks its rules."""
    if "max_tokens" in body:
        message = (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        )
        return {
            "message": message,
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        message = f"Unsupported value: 'temperature' does not support {temperature} with this model. Only the default (1) value is supported."
        return {
            "message": message,
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    return None


@dataclass
class RecordedRequest:
    path: str
    query: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeOpenAI(LoopbackServer):
    reply_text: str = "Hello from the fake OpenAI."
    rate_limited_requests: int = 0  # answer this many upcoming requests with a 429
    requests: list[RecordedRequest] = field(default_factory=list)
    answers: list[tuple[str, Calls]] = field(default_factory=list)
    answering: int | None = None  # how many more requests are answered; the rest wait (None: all)
    context_tokens: int | None = None  # a llama.cpp server's context window (None: no limit)
    _gate: asyncio.Condition | None = None

    def queue(self, text: str = "", call: Calls = None) -> None:
        """Answer an upcoming request with `text`, a tool call `{"name", "args"}` (or a list of
        them: parallel tool calls), or both."""
        self.answers.append((text, call))

    @property
    def url(self) -> str:
        """The server root; the SDK's base_url is this plus "/v1"."""
        return self.root_url

    def fail_next(self, times: int) -> None:
        self.rate_limited_requests = times

    async def let_through(self, requests: int | None) -> None:
        """Answer `requests` more requests (already waiting first) and hold the ones after; None: all."""
        async with self._condition():
            self.answering = requests
            self._condition().notify_all()

    async def wait_for_requests(self, count: int, timeout: float = 60) -> None:
        """Until `count` requests have arrived (answered or waiting)."""
        async with asyncio.timeout(timeout), self._condition():
            await self._condition().wait_for(lambda: len(self.requests) >= count)

    def _condition(self) -> asyncio.Condition:
        if self._gate is None:
            self._gate = asyncio.Condition()
        return self._gate

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        return app

    async def _chat_completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(
            RecordedRequest(path=request.path, query=request.query_string, headers=dict(request.headers), body=body)
        )
        async with self._condition():
            self._condition().notify_all()
            await self._condition().wait_for(lambda: self.answering is None or self.answering > 0)
            if request.transport is None or request.transport.is_closing():
                return web.Response(status=499)  # the client went away while it waited: nothing to answer
            if self.answering is not None:
                self.answering -= 1
        if self.rate_limited_requests > 0:
            self.rate_limited_requests -= 1
            error = {
                "error": {
                    "message": "Rate limit reached for requests.",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            }
            return _closing(web.json_response(error, status=429))
        if self.context_tokens is not None and (overflow := _past_context(body, self.context_tokens)) is not None:
            return _closing(web.json_response({"error": overflow}, status=400))
        model = str(body.get("model", "fake-model"))
        if is_reasoning_model(model) and (refusal := _refusal(body)) is not None:
            return _closing(web.json_response({"error": refusal}, status=400))
        text, call = self.answers.pop(0) if self.answers else (self.reply_text, None)
        return _closing(web.json_response(chat_completion(text, model, len(self.requests), call)))


def _past_context(body: dict[str, Any], context_tokens: int) -> dict[str, Any] | None:
    """llama.cpp's error for a prompt longer than its context window, or None when it fits."""
    tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
    if tokens <= context_tokens:
        return None
    return {
        "code": 400,
        "message": f"request ({tokens} tokens) exceeds the available context size ({context_tokens} tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": tokens,
        "n_ctx": context_tokens,
    }


def _closing(response: web.Response) -> web.Response:
    """No keep-alive: langchain-openai caches its httpx client, so pooled sockets would outlive the test."""
    response.force_close()
    return response


def chat_completion(text: str, model: str, number: int, call: Calls = None) -> dict[str, Any]:
    """A ChatCompletion with one assistant choice holding `text` and, if given, its tool calls
    (platform.openai.com/docs/api-reference/chat/object: `message.tool_calls` is an array, each
    call with its own id; several are parallel tool calls)."""
    prompt_tokens, reply_tokens = 12, max(1, len(text) // 4)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    calls = [call] if isinstance(call, dict) else list(call or [])
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_fake_{number}" + (f"_{index}" if index else ""),
                "type": "function",
                "function": {"name": one["name"], "arguments": json.dumps(one["args"])},
            }
            for index, one in enumerate(calls)
        ]
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": _usage(prompt_tokens, reply_tokens, REASONING_TOKENS if is_reasoning_model(model) else 0),
    }


def _usage(prompt_tokens: int, reply_tokens: int, reasoning_tokens: int) -> dict[str, Any]:
    """Chat Completions usage: completion_tokens include the reasoning tokens, itemised in the details."""
    completion = reply_tokens + reasoning_tokens
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }
    if reasoning_tokens:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return usage
