"""A fake of the Gemini REST API (`POST /v1beta/models/{model}:generateContent`) on 127.0.0.1.

google-genai, given `base_url`, posts to `<base_url>/v1beta/models/<model>:generateContent` with the
API key in the `x-goog-api-key` header. The fake records every request, can hang up on the next N
requests or answer them with a 429 RESOURCE_EXHAUSTED error, and otherwise replies with the next
queued answer (text and/or a functionCall, see `queue`) or else `reply_text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

API_VERSION = "v1beta"


@dataclass
class RecordedRequest:
    path: str
    query: str
    model: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeGemini(LoopbackServer):
    reply_text: str = "Hello from the fake Gemini."
    rate_limited_requests: int = 0  # answer this many upcoming requests with a 429
    dropped_requests: int = 0  # close the connection without answering on this many upcoming requests
    requests: list[RecordedRequest] = field(default_factory=list)
    answers: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)

    def queue(self, text: str = "", call: dict[str, Any] | None = None) -> None:
        """Answer an upcoming request with `text`, a functionCall `{"name", "args"}`, or both."""
        self.answers.append((text, call))

    @property
    def url(self) -> str:
        """The base_url to give the SDK (no API version, no trailing slash)."""
        return self.root_url

    def fail_next(self, times: int) -> None:
        self.rate_limited_requests = times

    def drop_next(self, times: int) -> None:
        self.dropped_requests = times

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(f"/{API_VERSION}/models/{{model}}:generateContent", self._generate_content)
        return app

    async def _generate_content(self, request: web.Request) -> web.Response:
        self.requests.append(
            RecordedRequest(
                path=request.path,
                query=request.query_string,
                model=request.match_info["model"],
                headers=dict(request.headers),
                body=await request.json(),
            )
        )
        if self.dropped_requests > 0:
            self.dropped_requests -= 1
            assert request.transport is not None
            request.transport.close()  # the client sees the server disconnect mid-request
            return web.Response()
        if self.rate_limited_requests > 0:
            self.rate_limited_requests -= 1
            error = {
                "error": {
                    "code": 429,
                    "message": "Resource has been exhausted (e.g. check quota).",
                    "status": "RESOURCE_EXHAUSTED",
                }
            }
            return web.json_response(error, status=429)
        text, call = self.answers.pop(0) if self.answers else (self.reply_text, None)
        return web.json_response(generate_content_response(text, request.match_info["model"], call))


def generate_content_response(text: str, model: str, call: dict[str, Any] | None = None) -> dict[str, Any]:
    """A GenerateContentResponse with one candidate holding `text` and, if given, a functionCall."""
    prompt_tokens, reply_tokens = 12, max(1, len(text) // 4)
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if call is not None:
        parts.append({"functionCall": call})
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": reply_tokens,
            "totalTokenCount": prompt_tokens + reply_tokens,
        },
        "modelVersion": model,
        "responseId": f"fake-{model}",
    }
