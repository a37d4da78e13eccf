"""Bounded retries with exponential backoff for transient model errors (429, 5xx, timeouts), and a
prompt past the model's context window sent again without its oldest lines."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import httpx
from langchain_core.messages import BaseMessage
from tenacity import AsyncRetrying, before_sleep_log, retry_if_exception, stop_after_attempt, wait_exponential

from graph.models.base import ChatRunnable
from graph.prompt import pair_tool_results

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = {408, 409, 425, 429}
_OVERFLOW_RETRIES = 3  # a prompt past the context window, sent again shorter at most this often
_CONTEXT_SHARE = 0.75  # of the window, for the prompt sent again: the rest for the reply
_TRANSIENT_TYPES = (
    TimeoutError,
    asyncio.TimeoutError,
    httpx.TimeoutException,
    httpx.NetworkError,
    # google-genai sends async requests through aiohttp when it is installed; its errors surface unwrapped.
    aiohttp.ClientConnectionError,
)


def _status_of(exc: BaseException) -> int | None:
    for attribute in ("status_code", "code", "status"):
        value = getattr(exc, attribute, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """True for rate limits, server errors and timeouts, anywhere in the exception's cause chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _TRANSIENT_TYPES):
            return True
        if type(current).__name__ in {"APITimeoutError", "APIConnectionError"}:
            return True
        status = _status_of(current)
        if status is not None and (status in _TRANSIENT_STATUS or 500 <= status <= 599):
            return True
        current = current.__cause__ or current.__context__
    return False


def context_overflow(exc: BaseException) -> Mapping[str, Any] | None:
    """The error of a prompt past the model's context window, or None. llama.cpp's server answers 400
    `{"error": {"type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M, ...}}`
    (tools/server: "request (N tokens) exceeds the available context size (M tokens)"); OpenAI answers
    400 with `"code": "context_length_exceeded"`. The OpenAI SDK keeps that object as `exc.body`."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and (
        body.get("type") == "exceed_context_size_error" or body.get("code") == "context_length_exceeded"
    ):
        return body
    return None


def without_oldest(messages: Sequence[BaseMessage], error: Mapping[str, Any]) -> list[BaseMessage]:
    """The prompt with its oldest conversation messages dropped, the system messages and the newest
    kept: down to _CONTEXT_SHARE of the window by the error's token counts, else by half."""
    head = [m for m in messages if m.type == "system"]
    rest = [m for m in messages if m.type != "system"]
    tokens, window = error.get("n_prompt_tokens"), error.get("n_ctx")
    chars = sum(len(m.text) for m in messages)
    if isinstance(tokens, int) and isinstance(window, int) and tokens > 0:
        budget = _CONTEXT_SHARE * window * chars / tokens - sum(len(m.text) for m in head)
    else:
        budget = sum(len(m.text) for m in rest) / 2
    kept: list[BaseMessage] = []
    kept_chars = 0
    for message in reversed(rest):
        if kept and kept_chars + len(message.text) > budget:
            break
        kept.append(message)
        kept_chars += len(message.text)
    return [*head, *pair_tool_results(list(reversed(kept)))]


async def ainvoke_with_retry(
    model: ChatRunnable, messages: Sequence[BaseMessage], *, attempts: int, backoff_seconds: float
) -> BaseMessage:
    prompt = list(messages)
    for overflows in range(_OVERFLOW_RETRIES + 1):
        try:
            return await _ainvoke_with_backoff(model, prompt, attempts=attempts, backoff_seconds=backoff_seconds)
        except Exception as exc:
            error = context_overflow(exc)
            shorter = without_oldest(prompt, error) if error is not None else prompt
            if error is None or overflows == _OVERFLOW_RETRIES or len(shorter) >= len(prompt):
                raise
            log.warning(
                "the prompt was past the model's context window (%s tokens of %s): again without its %d oldest messages",
                error.get("n_prompt_tokens", "?"),
                error.get("n_ctx", "?"),
                len(prompt) - len(shorter),
            )
            prompt = shorter
    raise AssertionError("unreachable: the last overflow reraises")


async def _ainvoke_with_backoff(
    model: ChatRunnable, messages: list[BaseMessage], *, attempts: int, backoff_seconds: float
) -> BaseMessage:
    """Up to `attempts` tries, waiting backoff_seconds × 1, 2, 4 … (at most × 16) before each next one.
    The first try runs on its own: most calls need no other, and tenacity's loop costs ~10 µs a call."""
    longest = max(backoff_seconds * 16, 0.001)
    try:
        return await model.ainvoke(list(messages))
    except Exception as exc:
        if attempts < 2 or not is_transient(exc):
            raise
        log.warning("model call failed (%s: %s); trying again in %.2f s", type(exc).__name__, exc, backoff_seconds)
        await asyncio.sleep(backoff_seconds)
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts - 1),
        wait=wait_exponential(multiplier=backoff_seconds * 2, max=longest),  # × 2, 4 … from the second try
        before_sleep=before_sleep_log(log, logging.WARNING),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await model.ainvoke(list(messages))
    raise AssertionError("unreachable: tenacity reraises the last error")
