"""HTTP plumbing shared by the HTTP providers.

* ``parse_retry_after``: the ``Retry-After`` header in seconds, from either of its two forms.
* ``status_error`` / ``transport_error``: one mapping from HTTP failures to openheim's provider
  errors, so every wire format reports an unreachable server, a bad key or a stalled stream alike.
* ``redact``: scrubs a secret out of text that came from a server before it reaches an error.

The client itself is made by ``http_client``. Only provider modules import this module (it
imports httpx), so importing openheim stays cheap.
"""

from __future__ import annotations

import math
import time
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderUnavailable,
    StreamCut,
)
from openheim.formats import safejson

REDACTED = "[redacted]"
_MAX_SERVER_TEXT = 500
_OVERFLOW_MARKERS = (
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI, vLLM, OpenRouter
    "exceed_context_size",  # llama.cpp's error type
    "exceeds the available context size",  # llama.cpp
    "context window",
    "prompt is too long",
    "exceeds the maximum number of tokens",  # Gemini
)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay seconds or an HTTP date), else None.

    A date in the past gives 0; anything unparsable gives None (the caller uses its backoff).
    """
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced (servers sometimes echo the key)."""
    if not secret:
        return text
    return text.replace(secret, REDACTED)


def server_message(body: bytes | str) -> str | None:
    """The server's own error text from a JSON error body, if it has one.

    Understands the common shapes: ``{"error": {"message": ...}}`` (OpenAI, Anthropic, Gemini),
    ``{"error": "..."}`` (Ollama), ``{"detail": ...}`` (FastAPI servers such as vLLM).
    """
    try:
        data = safejson.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    found = _message_in(data)
    return found[:_MAX_SERVER_TEXT] if found else None


def _message_in(data: Any) -> str | None:
    if isinstance(data, str):
        return data.strip() or None
    if isinstance(data, list):
        return _message_in(data[0]) if data else None
    if isinstance(data, dict):
        for key in ("error", "message", "detail", "msg"):
            found = _message_in(data.get(key))
            if found:
                return found
    return None


def _status_hint(status: int, *, model: str, api_base: str, key_hint: str) -> str | None:
    if status in (401, 403):
        return key_hint
    if status == 404:
        return f"check api_base ({api_base}) and the model name ({model!r})"
    if status == 413:
        return "the request is too large: shorten the conversation or the attachments"
    if status == 429:
        return "rate limited or out of quota: wait and retry, or check your plan's limits"
    if status >= 500:
        return "the server failed; try again later"
    if status in (400, 422):
        return "the server rejected the request; its message says which part"
    return None


MAX_ERROR_BODY = 64 * 1024
"""Bytes of an error response's body read for its message: enough for any server's JSON error,
and a server that answers an error with an endless body cannot fill the memory."""
MAX_WHOLE_BODY = 32 * 1024 * 1024
"""Bytes of a completion answered whole (not streamed) that openheim reads at most."""


async def read_capped(response: httpx.Response, limit: int) -> tuple[httpx.Response, bool]:
    """``response`` read to at most ``limit`` bytes of its (decoded) body, as a response of
    its own that holds them, and whether the body went on past ``limit`` (the rest is left
    unread: closing the streamed response then drops its connection)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            break
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in _FRAMING_HEADERS
    ]
    read = httpx.Response(
        response.status_code,
        headers=headers,
        content=bytes(body[:limit]),
        request=response.request,
    )
    return read, len(body) > limit


_FRAMING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
"""Headers of the original response that do not describe a body read and decoded already."""


def status_error(
    response: httpx.Response,
    *,
    provider: str,
    model: str,
    api_base: str,
    key_hint: str,
) -> ProviderError:
    """The error for a response with status >= 400; its body must already be read."""
    status = response.status_code
    detail = server_message(response.content)
    if detail is None:
        text = response.text.strip()[:_MAX_SERVER_TEXT]
        detail = text or response.reason_phrase or "no details"
    message = f"provider {provider!r}: HTTP {status} from {response.request.url}: {detail}"
    if status in (400, 413, 422) and _is_overflow(response.text):
        return ContextOverflow(
            message,
            status=status,
            provider=provider,
            hint="the conversation is longer than the model's context window: "
            "start a new session or set context_window so openheim trims it",
        )
    return ProviderHTTPError(
        message,
        status=status,
        hint=_status_hint(status, model=model, api_base=api_base, key_hint=key_hint),
        provider=provider,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
    )


def _is_overflow(body: str) -> bool:
    """Whether an error body says the prompt does not fit the context window."""
    lowered = body.lower()
    return any(marker in lowered for marker in _OVERFLOW_MARKERS)


def transport_error(
    exc: httpx.RequestError,
    *,
    url: str,
    provider: str,
    timeout_secs: float,
    streaming: bool,
) -> ProviderError:
    """The error for a failure below HTTP: no connection, a stalled read, a cut or garbled stream.

    ``streaming`` says whether the response headers had arrived, which turns a closed
    connection from "the server went away" into "the stream ended early".
    """
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderUnavailable(
            f"provider {provider!r}: connecting to {url} timed out after {timeout_secs:g} s",
            hint="check that the server is up and reachable, api_base, and any proxy "
            "settings (HTTPS_PROXY, NO_PROXY)",
            provider=provider,
        )
    if isinstance(exc, httpx.ReadTimeout):
        phase = "while streaming" if streaming else "waiting for a response"
        return ProviderUnavailable(
            f"provider {provider!r}: no data from {url} for {timeout_secs:g} seconds {phase}",
            hint="the server stalled; retry, or raise timeout_secs for a slow local model",
            provider=provider,
        )
    if isinstance(exc, httpx.ConnectError):
        return ProviderUnavailable(
            f"provider {provider!r}: cannot connect to {url} ({what})",
            hint="check that the server is running and api_base is right; start a local "
            "server (Ollama, llama.cpp, LM Studio) first",
            provider=provider,
        )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ProviderError(
            f"provider {provider!r}: cannot use the URL {url} ({what})",
            hint="api_base must start with http:// or https://",
            provider=provider,
        )
    if isinstance(exc, httpx.DecodingError):
        return ProviderProtocolError(
            f"provider {provider!r}: the response from {url} could not be decoded ({what})",
            hint="a proxy or the server garbled the response; retry, or check api_base",
            provider=provider,
        )
    if streaming and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return StreamCut(
            f"provider {provider!r}: stream ended early: {url} closed the connection before "
            f"the response was complete ({what})",
            hint="the server crashed or a proxy cut the stream; retry",
            provider=provider,
        )
    return ProviderUnavailable(
        f"provider {provider!r}: the connection to {url} failed ({what})",
        hint="check the network and any proxy settings, then retry",
        provider=provider,
    )
