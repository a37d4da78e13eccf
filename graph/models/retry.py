"""Bounded retries with exponential backoff for transient model errors (429, 5xx, timeouts)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import aiohttp
import httpx
from langchain_core.messages import BaseMessage
from tenacity import AsyncRetrying, before_sleep_log, retry_if_exception, stop_after_attempt, wait_exponential

from graph.models.base import ChatRunnable

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = {408, 409, 425, 429}
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


async def ainvoke_with_retry(
    model: ChatRunnable, messages: Sequence[BaseMessage], *, attempts: int, backoff_seconds: float
) -> BaseMessage:
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=backoff_seconds, max=max(backoff_seconds * 16, 0.001)),
        before_sleep=before_sleep_log(log, logging.WARNING),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await model.ainvoke(list(messages))
    raise AssertionError("unreachable: tenacity reraises the last error")
