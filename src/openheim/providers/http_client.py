"""The ``httpx.AsyncClient`` of model APIs, made one way for every HTTP provider.

* ``make_client``: the client every provider uses unless one is injected: system trust store
  plus ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, proxy variables, per-phase timeouts, no cookies,
  openheim's transport or (``OPENHEIM_HTTP_TRANSPORT=httpx``) httpx's own.
* ``client_key``: what such a client depends on, so providers with equal keys may share one.

Only provider modules and the runtime's client pool import this module (it imports httpx and
ssl), so importing openheim stays cheap.
"""

from __future__ import annotations

import os
import ssl
from http.cookiejar import Cookie, CookieJar
from pathlib import Path
from typing import Any
from urllib.request import Request

import httpx

from openheim.errors import ConfigError
from openheim.formats.urls import is_loopback
from openheim.providers.transport import AsyncioTransport


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


TRANSPORT_ENV = "OPENHEIM_HTTP_TRANSPORT"
"""``httpx`` sends every request through httpx's own transport (httpcore) instead of
openheim's: the escape hatch should a server and openheim's HTTP/1.1 client disagree."""
_TRANSPORTS = ("openheim", "httpx")


def _own_transport() -> bool:
    """Whether ``TRANSPORT_ENV`` leaves requests on openheim's transport (its default)."""
    raw = os.environ.get(TRANSPORT_ENV)
    value = (raw or "").strip().lower() or _TRANSPORTS[0]
    if value not in _TRANSPORTS:
        raise ConfigError(
            f"{TRANSPORT_ENV}={raw!r} is not a transport",
            hint=f"set {TRANSPORT_ENV} to openheim (the default) or httpx",
        )
    return value == _TRANSPORTS[0]


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


_CLIENT_VARIABLES = (
    *_PROXY_VARIABLES,
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    TRANSPORT_ENV,
)


def client_key(timeout_secs: float, api_base: str) -> tuple[object, ...]:
    """Everything ``make_client(timeout_secs, api_base)`` depends on: the endpoint's origin,
    the timeout and the proxy, CA and transport variables. Two providers with equal keys can
    share one client (the key travels in each request's headers, never in the client)."""
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
    start than httpx's own); where one is set, or ``OPENHEIM_HTTP_TRANSPORT=httpx`` asks for
    it, through httpx's transports, which route by the proxy variables (httpx ignores them once
    it is handed a transport), with no cap on connections, since many sessions may stream
    through one client at once. The client keeps no cookies (``ModelClient``).

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
    if not _own_transport() or (not local and _proxy_set()):
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=20)
        return ModelClient(verify=verify, trust_env=not local, timeout=timeout, limits=limits)
    transport = AsyncioTransport(verify)
    return ModelClient(transport=transport, verify=verify, trust_env=not local, timeout=timeout)
