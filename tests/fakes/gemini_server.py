"""A fake of the Gemini REST API (`POST /v1beta/models/{model}:generateContent`) on 127.0.0.1.

google-genai, given `base_url`, posts to `<base_url>/v1beta/models/<model>:generateContent` with the
API key in the `x-goog-api-key` header. The fake records every request, can hang up on the next N
requests or answer them with a 429 RESOURCE_EXHAUSTED error, and otherwise replies with the next
queued answer (text and/or a functionCall, see `queue`) or else `reply_text`.

Gemini 3 and later, as Google's "Thought Signatures" page describes them: every functionCall part of a
reply carries a `thoughtSignature` (and so does the last text part of a reply without a call), and a
request whose current turn replays a function call without its signature is refused with a 400
INVALID_ARGUMENT. langchain-google-genai's "skip validator" sentinel gets past that check, as it does
on the real API; the fake counts each one in `skipped_signatures`. Usage metadata counts thinking
tokens (`thoughtsTokenCount`) for those models.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

# The Gemini API serves both: google-genai 3 calls v1 by default, earlier releases v1beta.
API_VERSIONS = ("v1", "v1beta")
SKIP_SENTINEL = "skip_thought_signature_validator"  # langchain-google-genai's stand-in for a lost signature
THOUGHT_TOKENS = 9  # thinking tokens a Gemini 3 reply reports


def is_gemini_3_or_later(model: str) -> bool:
    found = re.match(r"gemini-(\d+)", model)
    return bool(found) and int(found.group(1)) >= 3


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
    issued_signatures: list[str] = field(default_factory=list)  # every thoughtSignature the fake replied with
    skipped_signatures: int = 0  # replayed calls that carried the skip sentinel instead of their signature

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
        for version in API_VERSIONS:
            app.router.add_post(f"/{version}/models/{{model}}:generateContent", self._generate_content)
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
        model = request.match_info["model"]
        body = self.requests[-1].body
        if is_gemini_3_or_later(model):
            refusal = self._unsigned_call(body.get("contents", []))
            if refusal is not None:
                error = {"error": {"code": 400, "message": refusal, "status": "INVALID_ARGUMENT"}}
                return web.json_response(error, status=400)
        text, call = self.answers.pop(0) if self.answers else (self.reply_text, None)
        signature = self._new_signature() if is_gemini_3_or_later(model) else None
        return web.json_response(generate_content_response(text, model, call, signature))

    def _new_signature(self) -> str:
        signature = base64.b64encode(f"fake-thought-{len(self.issued_signatures) + 1}".encode()).decode()
        self.issued_signatures.append(signature)
        return signature

    def _unsigned_call(self, contents: list[dict[str, Any]]) -> str | None:
        """The refusal for a function call of the current turn replayed without its signature, if any.

        The current turn starts at the last user content holding text (not a functionResponse); in it,
        the first functionCall part of each model content must carry its thoughtSignature."""
        start = 0
        for index, content in enumerate(contents):
            parts = content.get("parts", [])
            if content.get("role") == "user" and any("text" in p for p in parts):
                if not any("functionResponse" in p for p in parts):
                    start = index + 1
        for index in range(start, len(contents)):
            content = contents[index]
            calls = [p for p in content.get("parts", []) if "functionCall" in p]
            if content.get("role") != "model" or not calls:
                continue
            signature = calls[0].get("thoughtSignature")
            if signature == SKIP_SENTINEL:
                self.skipped_signatures += 1
            elif not signature:
                name = calls[0]["functionCall"].get("name")
                return f"Function call `{name}` in the `{index + 1}.` content block is missing a `thought_signature`."
        return None


def generate_content_response(
    text: str, model: str, call: dict[str, Any] | None = None, signature: str | None = None
) -> dict[str, Any]:
    """A GenerateContentResponse with one candidate holding `text` and, if given, a functionCall.
    With a signature (Gemini 3), the call carries it, or else the last text part does."""
    prompt_tokens, reply_tokens = 12, max(1, len(text) // 4)
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if call is not None:
        parts.append({"functionCall": call})
    if signature is not None and parts:
        parts[-1]["thoughtSignature"] = signature
    thoughts = THOUGHT_TOKENS if signature is not None else 0
    usage = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": reply_tokens,
        "totalTokenCount": prompt_tokens + reply_tokens + thoughts,
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": f"fake-{model}",
    }
