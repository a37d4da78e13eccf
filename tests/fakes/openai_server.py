"""A fake of the OpenAI Chat Completions API (`POST /v1/chat/completions`) on 127.0.0.1.

Give the SDK `base_url=<fake.url>/v1`. The fake records every request, can answer the next N
requests with a 429 rate-limit error and otherwise replies with the next queued answer (text
and/or a tool call, see `queue`) or else `reply_text`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer


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
    answers: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)

    def queue(self, text: str = "", call: dict[str, Any] | None = None) -> None:
        """Answer an upcoming request with `text`, a tool call `{"name", "args"}`, or both."""
        self.answers.append((text, call))

    @property
    def url(self) -> str:
        """The server root; the SDK's base_url is this plus "/v1"."""
        return self.root_url

    def fail_next(self, times: int) -> None:
        self.rate_limited_requests = times

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        return app

    async def _chat_completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(
            RecordedRequest(path=request.path, query=request.query_string, headers=dict(request.headers), body=body)
        )
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
        model = str(body.get("model", "fake-model"))
        text, call = self.answers.pop(0) if self.answers else (self.reply_text, None)
        return _closing(web.json_response(chat_completion(text, model, len(self.requests), call)))


def _closing(response: web.Response) -> web.Response:
    """No keep-alive: langchain-openai caches its httpx client, so pooled sockets would outlive the test."""
    response.force_close()
    return response


def chat_completion(text: str, model: str, number: int, call: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ChatCompletion with one assistant choice holding `text` and, if given, one tool call."""
    prompt_tokens, reply_tokens = 12, max(1, len(text) // 4)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if call is not None:
        message["tool_calls"] = [
            {
                "id": f"call_fake_{number}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
            }
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
                "finish_reason": "tool_calls" if call is not None else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": reply_tokens,
            "total_tokens": prompt_tokens + reply_tokens,
        },
    }
