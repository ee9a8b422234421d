"""HTTP plumbing shared by the HTTP providers.

* ``make_client``: the ``httpx.AsyncClient`` every provider uses unless one is injected: system
  trust store plus ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, proxy variables, per-phase timeouts,
  no cookies; ``client_key``: what such a client depends on, so equal keys may share one.
* ``parse_retry_after``: the ``Retry-After`` header in seconds, from either of its two forms.
* ``status_error`` / ``transport_error``: one mapping from HTTP failures to openheim's provider
  errors, so every wire format reports an unreachable server, a bad key or a stalled stream alike.
* ``redact``: scrubs a secret out of text that came from a server before it reaches an error.

Only provider modules import this module (it imports httpx and ssl), so importing openheim stays
cheap.
"""

from __future__ import annotations

import math
import os
import ssl
import time
from datetime import UTC
from email.utils import parsedate_to_datetime
from http.cookiejar import Cookie, CookieJar
from pathlib import Path
from typing import Any
from urllib.request import Request

import httpx

from openheim import safejson
from openheim.errors import (
    ConfigError,
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderUnavailable,
    StreamCut,
)
from openheim.providers.transport import AsyncioTransport
from openheim.urls import is_loopback

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


def ssl_context() -> ssl.SSLContext:
    """The system trust store, plus the CAs named by ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``.

    The variables are how corporate proxies and self-hosted endpoints with a private CA are
    usually configured. OpenSSL would let them replace the system store; it is loaded explicitly
    as well so public endpoints keep working.
    """
    context = ssl.create_default_context()
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if not (cafile or capath):
        return context
    system = ssl.get_default_verify_paths()
    if Path(system.openssl_cafile).is_file():
        context.load_verify_locations(cafile=system.openssl_cafile)
    if Path(system.openssl_capath).is_dir():
        context.load_verify_locations(capath=system.openssl_capath)
    try:
        context.load_verify_locations(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"cannot load CA certificates from SSL_CERT_FILE={cafile!r} "
            f"SSL_CERT_DIR={capath!r}: {exc}",
            hint="point SSL_CERT_FILE at a PEM bundle and SSL_CERT_DIR at a certificate "
            "folder, or unset them",
        ) from exc
    return context


_PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
)


def _proxy_set() -> bool:
    return any(os.environ.get(v) for v in _PROXY_VARIABLES)


def _needs_trust_store(api_base: str | None) -> bool:
    """Whether TLS may be used: an https endpoint, or any proxy (which may itself be https)."""
    if api_base is None or not api_base.startswith("http://"):
        return True
    return _proxy_set()


class _NoCookies(CookieJar):
    """A cookie jar that never keeps a cookie.

    Model APIs do not need cookies, and one client serves every provider of a runtime that
    talks to the same endpoint, whatever its key: a cookie one provider's server set must
    never travel with another provider's requests."""

    def set_cookie(self, cookie: Cookie) -> None:
        """Drops ``cookie``."""

    def extract_cookies(self, response: Any, request: Request) -> None:
        """Keeps none of ``response``'s cookies."""


class _NoCookieStore(httpx.Cookies):
    """A client's cookies over ``_NoCookies``: a response is not even looked at for cookies
    (httpx would build two ``urllib`` stand-ins of it per response, only for the jar to keep
    nothing)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """Keeps none of ``response``'s cookies."""


_NO_COOKIES = _NoCookieStore(_NoCookies())
"""Shared by every model client: it never holds a cookie."""


class ModelClient(httpx.AsyncClient):
    """The ``AsyncClient`` of model APIs: it keeps no cookies (setting some does nothing)."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        """Ignored: a client shared by providers of different keys must keep no cookie."""


_CLIENT_VARIABLES = (*_PROXY_VARIABLES, "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")


def client_key(timeout_secs: float, api_base: str) -> tuple[object, ...]:
    """Everything ``make_client(timeout_secs, api_base)`` depends on: the endpoint's origin,
    the timeout and the proxy and CA variables. Two providers with equal keys can share one
    client (the key travels in each request's headers, never in the client)."""
    environment = tuple(os.environ.get(name) for name in _CLIENT_VARIABLES)
    try:
        url = httpx.URL(api_base)
    except httpx.InvalidURL:  # the provider refuses it with a clear error
        return (api_base, timeout_secs, environment)
    return (url.scheme, url.host, url.port, timeout_secs, environment)


def make_client(timeout_secs: float, api_base: str | None = None) -> httpx.AsyncClient:
    """An ``AsyncClient`` for model APIs.

    ``httpx.Timeout(timeout_secs)`` bounds connecting, writing and each read: the read limit is
    the idle gap between streamed chunks, never the whole response, so a long generation that
    keeps streaming is not cut off. ``trust_env`` honours ``HTTPS_PROXY`` / ``NO_PROXY`` etc.,
    except for a loopback endpoint, which is never reached through a proxy. Where no proxy
    applies, requests go through ``AsyncioTransport`` (HTTP/1.1 on asyncio streams, cheaper to
    start than httpx's own); where one is set, through httpx's transports, which route by the
    proxy variables (httpx ignores them once it is handed a transport), with no cap on
    connections, since many sessions may stream through one client at once. The client keeps
    no cookies (``ModelClient``).

    Loading the trust store costs tens of milliseconds, so a plain ``http://`` endpoint (a local
    server) gets a TLS context with no CAs instead: it is never used, and if it were it would
    reject every certificate rather than accept one unchecked.
    """
    if _needs_trust_store(api_base):
        verify = ssl_context()
    else:
        verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    local = api_base is not None and is_loopback(api_base)
    timeout = httpx.Timeout(timeout_secs)
    if not local and _proxy_set():
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
        return ModelClient(verify=verify, trust_env=True, timeout=timeout, limits=limits)
    transport = AsyncioTransport(verify)
    return ModelClient(transport=transport, verify=verify, trust_env=not local, timeout=timeout)


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
