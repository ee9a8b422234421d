"""``HTTPProvider``: what every HTTP adapter shares.

Each wire format (OpenAI chat completions, Anthropic Messages, Gemini) subclasses it and says
only what differs: where the key goes, the URL, the body, and how to read the events. The base
owns the client (closing it only if it built it), the headers, one streamed POST with every
transport and status failure mapped to openheim's errors, JSON decoding with a clear message,
and scrubbing the key out of every error (servers sometimes echo it back).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any, ClassVar, Self

import httpx

from openheim._version import __version__
from openheim.errors import ConfigError, ProviderError, ProviderProtocolError, StreamCut
from openheim.formats import safejson
from openheim.providers.base import ProviderSettings, StreamItem
from openheim.providers.http import (
    MAX_ERROR_BODY,
    MAX_WHOLE_BODY,
    read_capped,
    redact,
    status_error,
    transport_error,
)
from openheim.providers.http_client import make_client
from openheim.providers.json_body import encode
from openheim.providers.sse import EventStream, EventStreamError

Reader = Callable[[EventStream], AsyncGenerator[StreamItem, None]]
_DECODER: Any = json.JSONDecoder()  # its scanner is no part of the typed interface
_scan: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once
"""The standard decoder's scanner: one JSON value from an index, and the index after it."""
_SSE_HEADERS = {
    "Accept": "text/event-stream",
    "Accept-Encoding": "identity",
    "Cache-Control": "no-store",
}
"""Sent with every streamed POST; ``identity`` because a compressed stream gains little (each
event is flushed on its own) and would have to pass through httpx's decoders."""
_KEPT = 256
"""POST parts kept (per URL, client headers and provider headers: a handful per process)."""
_POSTS: dict[tuple[object, ...], tuple[httpx.URL, httpx.Headers]] = {}
"""The parsed URL and merged headers of a POST, by what they are made of. The key holds the
provider's headers (its API key among them) only in this process's memory, as the provider
itself does."""


def event_object(
    chunk: Any, provider: str, *, wire: str, error_text: Callable[[Any], str], failed_hint: str
) -> dict[str, Any]:
    """One decoded stream event as a JSON object, or the error it is (not an object, or an
    ``{"error": ...}`` the server sent mid-stream)."""
    if chunk.__class__ is dict and not chunk.get("error"):
        return chunk  # every delta: the one check that matters, first
    if not isinstance(chunk, dict):
        raise ProviderProtocolError(
            f"provider {provider!r}: expected a JSON object per event, got {chunk!r:.200}",
            hint=f"the server does not speak {wire}; check api_base and kind",
            provider=provider,
        )
    if chunk.get("error"):
        raise ProviderError(
            f"provider {provider!r} reported an error mid-stream: {error_text(chunk['error'])}",
            hint=failed_hint,
            provider=provider,
        )
    return chunk


class HTTPProvider:
    """Base class of the HTTP adapters; subclasses set the class variables and ``stream``."""

    wire_name: ClassVar[str]
    """The API's name in messages (``the Anthropic API``)."""
    example_base: ClassVar[str]
    """An ``api_base`` to quote in hints."""
    key_env: ClassVar[str]
    """The environment variable that usually holds the key."""

    def __init__(
        self, settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
    ) -> None:
        if not settings.api_base.startswith(("http://", "https://")):
            raise ConfigError(
                f"provider {settings.name!r} has api_base {settings.api_base!r}",
                hint=f"set api_base to the API's URL, e.g. {self.example_base}",
            )
        self.name = settings.name
        self.settings = settings
        self._owns_client = http_client is None
        self._client = (
            http_client
            if http_client is not None
            else make_client(settings.timeout_secs, settings.api_base)
        )
        self._headers = {"User-Agent": f"openheim/{__version__}"}
        if settings.api_key:
            self._headers.update(self.auth_headers(settings.api_key))
        self._headers.update(settings.headers)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, kind={self.settings.kind!r}, "
            f"api_base={self.settings.api_base!r}, model={self.settings.model!r})"
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def key_hint(self) -> str:
        """What to check on 401/403: the key's source, never the key."""
        where = f"[providers.{self.name}]"
        if not self.settings.api_key:
            return (
                f"provider {self.name!r} has no API key: set {self.key_env} or api_key in {where}"
            )
        return (
            f"check the API key (the provider's api_key, usually from {self.key_env}, or "
            f"env_var / api_key in {where}) and that it may use this model"
        )

    async def post_sse(
        self, url: str, body: dict[str, Any] | bytes, model: str, read: Reader
    ) -> AsyncGenerator[StreamItem, None]:
        """POST ``body`` (a JSON object, or its encoded bytes) and yield what ``read`` makes of
        the event stream."""
        async with self.open_sse(url, body, model) as source, aclosing(read(source)) as items:
            async for item in items:
                yield item

    @asynccontextmanager
    async def open_sse(
        self, url: str, body: dict[str, Any] | bytes, model: str
    ) -> AsyncIterator[EventStream]:
        """POST ``body`` (a JSON object, or its encoded bytes): the event stream of the answer,
        open for the block, and every transport and stream failure inside the block raised as
        openheim's error (the key scrubbed out). A reader that reads inside the block itself
        yields its items with no level of generators between it and its caller."""
        started = False
        content = body if isinstance(body, bytes) else encode(body)
        try:
            response = await self._client.send(self._request(url, content), stream=True)
            try:
                await self._check_status(response, model)
                started = True
                source = EventStream(response)
                try:
                    yield source
                finally:
                    await source.aclose()
            finally:
                await response.aclose()
        except EventStreamError as exc:
            raise self.scrub(self.malformed(url, str(exc))) from None
        except httpx.RequestError as exc:
            error = transport_error(
                exc,
                url=url,
                provider=self.name,
                timeout_secs=self.settings.timeout_secs,
                streaming=started,
            )
            raise self.scrub(error) from exc
        except ProviderError as error:
            self.scrub(error)
            raise

    def _request(self, url: str, content: bytes) -> httpx.Request:
        """The POST of ``content`` to ``url``: what ``client.build_request`` makes, but from
        parts kept between calls and shared by the providers of a process (the parsed URL,
        the client's headers merged with this provider's), which are most of its cost. A
        client with default query parameters or cookies gets ``build_request`` itself."""
        client = self._client
        if client.params or client.cookies:
            return client.build_request("POST", url, content=content, headers=self._post_headers())
        key = (url, tuple(client.headers.raw), self._headers_key)
        found = _POSTS.get(key)
        if found is None:
            if len(_POSTS) >= _KEPT:
                _POSTS.clear()
            merged = httpx.Headers(client.headers)
            merged.update(self._post_headers())
            found = _POSTS[key] = (httpx.URL(url), merged)
        return httpx.Request(
            "POST",
            found[0],
            headers=found[1],
            content=content,
            extensions={"timeout": client.timeout.as_dict()},
        )

    @property
    def _headers_key(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._headers.items())

    def _post_headers(self) -> httpx.Headers:
        """This provider's headers for a streamed POST of JSON."""
        headers = httpx.Headers({**self._headers, **_SSE_HEADERS})
        headers.setdefault("Content-Type", "application/json")
        return headers

    async def _check_status(self, response: httpx.Response, model: str) -> None:
        if response.status_code < 400:
            return
        response, _ = await read_capped(response, MAX_ERROR_BODY)
        error = status_error(
            response,
            provider=self.name,
            model=model,
            api_base=self.settings.api_base,
            key_hint=self.key_hint,
        )
        self.adjust_error(error, response)
        raise error

    def adjust_error(self, error: ProviderError, response: httpx.Response) -> None:
        """A hook for wire formats whose error statuses say more than the status code."""

    def decode(self, data: str, url: str) -> Any:
        """One JSON stream event; a clear ProviderProtocolError when it is not JSON.

        The usual event, one JSON value from its first character to its last, is read by the
        decoder's scanner straight away; anything else (whitespace around it, more after it,
        no JSON at all) goes through ``json.loads``, which accepts or refuses it as always."""
        try:
            safejson.check_depth(data)
            value, end = _scan(data, 0)
        except (StopIteration, ValueError):
            end = -1
        if end == len(data):
            return value
        try:
            return safejson.loads(data)
        except ValueError:
            raise ProviderProtocolError(
                f"provider {self.name!r}: {url} sent a stream event that is not JSON: "
                f"{data[:200]!r}",
                hint=self.wire_hint,
                provider=self.name,
            ) from None

    async def whole_body(self, source: EventStream, url: str) -> Any:
        """The JSON body of a server that answered without streaming (some ignore the flag)."""
        read, cut = await read_capped(source.response, MAX_WHOLE_BODY)
        if cut:
            raise ProviderProtocolError(
                f"provider {self.name!r}: {url} answered with a body over "
                f"{MAX_WHOLE_BODY // (1024 * 1024)} MiB, more than a completion",
                hint=f"check that api_base points at {self.wire_name} (e.g. {self.example_base})",
                provider=self.name,
            )
        body = read.content
        try:
            return safejson.loads(body)
        except (ValueError, UnicodeDecodeError):
            content_type = source.response.headers.get("content-type") or "no content type"
            raise ProviderProtocolError(
                f"provider {self.name!r}: {url} answered with {content_type}, neither an event "
                f"stream nor JSON: {body[:200]!r}",
                hint=f"check that api_base points at {self.wire_name} (e.g. {self.example_base})",
                provider=self.name,
            ) from None

    def is_event_stream(self, source: EventStream) -> bool:
        return "text/event-stream" in source.response.headers.get("content-type", "")

    def malformed(self, url: str, what: str) -> ProviderProtocolError:
        """A stream whose bytes are not a well-formed event stream."""
        return ProviderProtocolError(
            f"provider {self.name!r}: {url} sent a malformed event stream: {what}",
            hint=self.wire_hint,
            provider=self.name,
        )

    @property
    def wire_hint(self) -> str:
        """What to check when the server's answer is not this wire format."""
        return (
            f"the server does not speak {self.wire_name}; check api_base "
            f"(e.g. {self.example_base}) and kind"
        )

    def stream_cut(self, url: str, what: str) -> StreamCut:
        return StreamCut(
            f"provider {self.name!r}: stream ended early: {url} {what}",
            hint="the server crashed or a proxy cut the stream; retry",
            provider=self.name,
        )

    def scrub(self, error: ProviderError) -> ProviderError:
        """Remove the API key from the error's message and hint (servers may echo it)."""
        key = self.settings.api_key
        error.message = redact(error.message, key)
        error.hint = redact(error.hint, key) if error.hint else error.hint
        error.args = (error.message,)
        return error
