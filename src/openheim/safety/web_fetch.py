"""``web_fetch``: read one public web page as text, without becoming an SSRF proxy.

A model that can fetch URLs could be steered (by a prompt injection in a page it read) into
reading the cloud metadata service, a router's admin page or a service bound to loopback. So:

* only ``http`` and ``https``; the host is resolved once, off the event loop, and **every**
  resolved address must be public (not private, loopback, link-local, CGNAT, multicast,
  unspecified, reserved or a cloud metadata address); known metadata host names are refused;
* the connection goes to the checked address itself: the request URL carries the IP, the
  ``Host`` header and the TLS server name (SNI and certificate check) carry the original name,
  so a DNS answer that changes between the check and the connect (rebinding) is never used;
* no proxy from the environment, no automatic redirects (a 3xx is reported with its target),
  a 20 s deadline for the whole fetch and at most 256 KiB of body;
* HTML becomes readable text (``html_text``), other text is returned as is, binary is refused.

Hosts named in ``allow_hosts`` (``"docs.internal"``, ``"127.0.0.1:8765"``) skip the address
check, so a user can open a specific internal service on purpose; they are still pinned.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, TypeAlias

import httpx

from openheim._version import __version__
from openheim.errors import ToolError
from openheim.tools.base import Tool, ToolKind, ToolOutput
from openheim.tools.builtin.fs import looks_binary
from openheim.tools.decorator import tool

MAX_BODY_BYTES = 256 * 1024
FETCH_TIMEOUT = 20.0

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
HostKey: TypeAlias = tuple[str, int | None]
"""An allow-list entry: a lower-case host and a port, or None for any port."""

_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog"})
_METADATA_IPS = frozenset(map(ipaddress.ip_address, ("169.254.169.254", "fd00:ec2::254")))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        *("application/json", "application/xml", "application/javascript", "application/yaml"),
        *("application/x-yaml", "application/toml", "application/x-ndjson", "application/sql"),
    }
)

_ADDRESS_CLASSES: tuple[tuple[str, Callable[[IPAddress], bool]], ...] = (
    ("a cloud metadata address", lambda ip: ip in _METADATA_IPS),
    ("a loopback address", lambda ip: ip.is_loopback),
    ("a link-local address", lambda ip: ip.is_link_local),
    ("a multicast address", lambda ip: ip.is_multicast),
    ("the unspecified address", lambda ip: ip.is_unspecified),
    ("a shared (CGNAT) address", lambda ip: ip in _CGNAT),
    ("a reserved address", lambda ip: ip.is_reserved),
    ("a private address", lambda ip: ip.is_private),
    ("a non-public address", lambda ip: not ip.is_global),
)


def address_refusal(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched from (``"a loopback address"``...), or None if public."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return next((label for label, test in _ADDRESS_CLASSES if test(ip)), None)


def parse_allow_entry(entry: str) -> HostKey:
    """``"host"``, ``"host:port"``, ``"[v6]:port"`` or a bare IPv6 address as a HostKey."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        host, port = entry, ""
    if port and not port.isdigit():
        raise ValueError(f"web_fetch_allow entry {entry!r} has an invalid port")
    return host.rstrip("."), int(port) if port else None


@dataclass(frozen=True, slots=True)
class _Target:
    url: httpx.URL
    host: str
    """The ASCII (IDNA) host name or IP, lower case, without a trailing dot."""
    port: int


def _parse(raw: str) -> _Target:
    try:
        url = httpx.URL(raw.strip())
    except httpx.InvalidURL as err:
        raise ToolError(f"invalid URL {raw!r}: {err}", hint="give a full http(s) URL") from None
    if url.scheme not in ("http", "https"):
        raise ToolError(
            f"web_fetch reads http and https URLs only, not {url.scheme or 'scheme-less'} ones",
            hint="give a URL starting with https:// or http://",
        )
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    if not host:
        raise ToolError(f"URL {raw!r} has no host", hint="give a URL such as https://example.com/")
    return _Target(url, host, url.port or (443 if url.scheme == "https" else 80))


def _getaddrinfo(host: str, port: int) -> list[str]:
    """The distinct addresses ``host`` resolves to, in resolver order (blocking)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]).partition("%")[0] for info in infos))


async def _resolve(target: _Target, allowed: bool) -> list[str]:
    """Resolve once and return the addresses to connect to, each checked unless ``allowed``."""
    if not allowed and target.host in _METADATA_NAMES:
        raise ToolError(
            f"{target.host} is a cloud metadata service; web_fetch refuses it",
            hint="fetch public pages only",
        )
    try:
        addresses = await asyncio.to_thread(_getaddrinfo, target.host, target.port)
    except (socket.gaierror, UnicodeError) as err:
        raise ToolError(
            f"cannot resolve {target.host}: {err}", hint="check the host name"
        ) from None
    if not allowed:
        _check_addresses(target.host, addresses)
    return addresses


def _check_addresses(host: str, addresses: list[str]) -> None:
    """Refuse the host if any address it resolves to is not public (one bad answer is enough)."""
    for address in addresses:
        reason = address_refusal(ipaddress.ip_address(address))
        if reason:
            raise ToolError(
                f"{host} resolves to {address}, {reason}; web_fetch reads public hosts only",
                hint="ask the user to add the host to web_fetch_allow if it must be read",
            )


def pinned_request(client: httpx.AsyncClient, url: httpx.URL, address: str) -> httpx.Request:
    """A GET of ``url`` sent to ``address``, keeping the name in Host and in TLS (SNI, cert)."""
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
    headers = {
        "Host": url.netloc.decode("ascii"),
        "User-Agent": f"openheim/{__version__}",
        "Accept": "text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.1",
        "Accept-Encoding": "identity",
    }
    return client.build_request(
        "GET", url.copy_with(host=address), headers=headers, extensions=extensions
    )


def _content_kind(mime: str) -> Literal["html", "text", "binary", "unknown"]:
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    return "unknown" if not mime else "binary"


def _binary_error(url: httpx.URL, mime: str) -> ToolError:
    return ToolError(
        f"{url} is {mime or 'binary content'}, which web_fetch does not read",
        hint="web_fetch reads HTML and text; images, PDFs and archives are refused",
    )


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    """At most MAX_BODY_BYTES of the body, and whether more was there."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return bytes(body[:MAX_BODY_BYTES]), True
    return bytes(body), False


def _decode(body: bytes, charset: str | None) -> str:
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return body.decode(codec, "replace")


def _redirect_target(url: httpx.URL, location: str) -> str:
    """The absolute URL a redirect points at (as given when it is not a valid URL)."""
    try:
        return str(url.join(location))
    except httpx.InvalidURL:
        return location


async def _render(url: httpx.URL, response: httpx.Response) -> ToolOutput:
    """The response as text for the model: a status line, then the page."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    if response.is_redirect:
        target = _redirect_target(url, response.headers["location"])
        return ToolOutput(
            f"{url}: {status}, a redirect to {target} (not followed; "
            "call web_fetch with that URL to read it)"
        )
    mime = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    kind = _content_kind(mime)
    if kind == "binary":
        raise _binary_error(url, mime)
    body, cut = await _read_capped(response)
    if kind == "unknown" and looks_binary(body):
        raise _binary_error(url, mime)
    text = _decode(body, response.charset_encoding)
    if kind == "html":
        from openheim.safety.html_text import html_to_text

        text = html_to_text(text, str(url))
    note = f" [cut: only the first {MAX_BODY_BYTES // 1024} KiB were read]" if cut else ""
    header = f"{url}: {status}, {mime or 'no content type'}{note}"
    return ToolOutput(f"{header}\n\n{text}", is_error=response.status_code >= 400)


async def _get(client: httpx.AsyncClient, target: _Target, addresses: list[str]) -> ToolOutput:
    """Fetch from the first checked address that accepts a connection."""
    failure: httpx.ConnectError | None = None
    for address in addresses:
        try:
            response = await client.send(pinned_request(client, target.url, address), stream=True)
        except httpx.ConnectError as err:
            failure = err
            continue
        try:
            return await _render(target.url, response)
        finally:
            await response.aclose()
    raise ToolError(
        f"cannot connect to {target.host}:{target.port}: {failure}",
        hint="check the URL, or try again later",
    )


async def fetch(url: str, allow: frozenset[HostKey]) -> ToolOutput:
    """Fetch ``url`` under the rules in the module docstring; ``allow`` skips address checks."""
    target = _parse(url)
    allowed = bool({(target.host, target.port), (target.host, None)} & allow)
    try:
        async with asyncio.timeout(FETCH_TIMEOUT):
            addresses = await _resolve(target, allowed)
            async with httpx.AsyncClient(trust_env=False, timeout=FETCH_TIMEOUT) as client:
                return await _get(client, target, addresses)
    except TimeoutError:
        raise ToolError(
            f"fetching {target.url} took longer than {FETCH_TIMEOUT:g} s",
            hint="try again later or another URL",
        ) from None
    except httpx.HTTPError as err:
        raise ToolError(f"fetching {target.url} failed: {err}", hint="try again later") from None


def web_fetch_tool(*, allow_hosts: Iterable[str] = ()) -> Tool:
    """The ``web_fetch`` tool; ``allow_hosts`` (config ``web_fetch_allow``) may be private."""
    allow = frozenset(map(parse_allow_entry, allow_hosts))

    @tool(read_only=True, kind=ToolKind.FETCH)
    async def web_fetch(
        url: Annotated[str, "The http:// or https:// URL of the page to read"],
    ) -> ToolOutput:
        """Read a public web page and return it as text: HTML is turned into readable text
        (headings, paragraphs, list items, links with their URLs), other text types come back
        as they are, binary content is refused. Redirects are not followed: the answer names
        the target. At most 256 KiB of the page is read; private and local addresses are
        refused."""
        return await fetch(url, allow)

    return web_fetch
