"""Sending to a platform's HTTP API: a 429 waits the time the platform names
(``Retry-After``, Telegram's ``parameters.retry_after``, Discord's ``retry_after``), a 5xx or
a network failure is retried with exponential backoff, a bounded number of times."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import httpx

from openheim.errors import PlatformError
from openheim.formats import safejson

log = logging.getLogger(__name__)

ATTEMPTS = 6
BACKOFF = 0.5
"""Seconds before the first retry; each later one waits twice as long."""
MAX_WAIT = 60.0
"""The longest wait honoured for one retry."""

Sleep = Callable[[float], Awaitable[None]]


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429 asks to wait: the header, or the platform's JSON field."""
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            return float(header)
        except ValueError:
            pass
    try:
        body = safejson.loads(response.content)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    params = body.get("parameters")
    value = params.get("retry_after") if isinstance(params, dict) else body.get("retry_after")
    return float(value) if isinstance(value, int | float) else None


async def request_with_retry(
    what: str,
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    attempts: int = ATTEMPTS,
    sleep: Sleep = asyncio.sleep,
) -> httpx.Response:
    """``send()`` until it is answered with neither a 429 nor a 5xx; ``what`` names the call in
    logs and errors (never its body or URL, which may hold a token)."""
    for attempt in range(attempts):
        wait = BACKOFF * 2**attempt
        try:
            response = await send()
        except httpx.TransportError as err:
            problem = f"network error ({type(err).__name__})"
        else:
            if response.status_code == 429:
                wait = retry_after(response) or wait
                problem = "rate limited (429)"
            elif response.status_code >= 500:
                problem = f"server error ({response.status_code})"
            else:
                return response
        if attempt + 1 < attempts:
            log.info("%s: %s; retrying in %.1f s", what, problem, min(wait, MAX_WAIT))
            await sleep(min(wait, MAX_WAIT))
    raise PlatformError(f"{what} failed after {attempts} tries: {problem}")
