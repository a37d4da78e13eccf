"""A fake of the Gemini REST API (`POST /v1beta/models/{model}:generateContent`) on 127.0.0.1.

google-genai, given `base_url`, posts to `<base_url>/v1beta/models/<model>:generateContent` with the
API key in the `x-goog-api-key` header. The fake records every request, can hang up on the next N
requests or answer them with a 429 RESOURCE_EXHAUSTED error, and otherwise replies with `reply_text`.
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
        return web.json_response(generate_content_response(self.reply_text, request.match_info["model"]))


def generate_content_response(text: str, model: str) -> dict[str, Any]:
    """A GenerateContentResponse with one candidate holding `text`."""
    prompt_tokens, reply_tokens = 12, max(1, len(text) // 4)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
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
