from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from openheim.errors import ToolError
from openheim.safety.web_fetch import (
    MAX_BODY_BYTES,
    address_refusal,
    parse_allow_entry,
    pinned_request,
    web_fetch_tool,
)
from openheim.tools.base import Tool, ToolContext, ToolKind, ToolOutput
from tests.tools.support import call

PAGE = b"""<!doctype html><html><head><title>Docs</title>
<script>alert("x")</script><style>p { color: red }</style></head>
<body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<h1>Getting   started</h1>
<p>Install it with <code>pip</code>, then read the <a href="/guide">guide</a>.</p>
<ul><li>fast</li><li>small</li></ul>
</body></html>"""

ROUTES: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/page": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
    "/redirect": (302, {"Location": "/page"}, b""),
    "/big": (200, {"Content-Type": "text/plain"}, b"abcdefgh" * (MAX_BODY_BYTES // 8 + 1024)),
    "/image": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n\0\0\0"),
    "/untyped": (200, {}, b"\x00\x01\x02binary"),
    "/json": (200, {"Content-Type": "application/json"}, b'{"ok": true}'),
    "/missing": (404, {"Content-Type": "text/plain"}, b"no such page"),
}


class Handler(BaseHTTPRequestHandler):
    """Serves ROUTES and records the Host header of each request."""

    hosts: list[str] = []

    def do_GET(self) -> None:
        Handler.hosts.append(self.headers.get("Host", ""))
        status, headers, body = ROUTES[self.path]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def fetch_local(port: int) -> Tool:
    Handler.hosts.clear()
    return web_fetch_tool(allow_hosts=[f"127.0.0.1:{port}"])


async def fetch(tool: Tool, ctx: ToolContext, url: str) -> ToolOutput:
    return await call(tool, ctx, url=url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.1/", "a private address"),
        ("http://172.16.0.1/", "a private address"),
        ("http://192.168.1.1/", "a private address"),
        ("http://127.0.0.1/", "a loopback address"),
        ("http://[::1]/", "a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://[fd00:ec2::254]/", "a cloud metadata address"),
        ("http://100.64.0.1/", r"a shared \(CGNAT\) address"),
        ("http://224.0.0.1/", "a multicast address"),
        ("http://0.0.0.0/", "the unspecified address"),
        ("http://[fe80::1]/", "a link-local address"),
        ("http://169.254.1.1/", "a link-local address"),
        ("http://[fc00::1]/", "a private address"),
        ("http://[::ffff:127.0.0.1]/", "a loopback address"),
        ("http://255.255.255.255/", "a reserved address"),
        ("http://localhost/", "a loopback address"),
    ],
)
async def test_refuses_non_public_addresses(ctx: ToolContext, url: str, reason: str) -> None:
    with pytest.raises(ToolError, match=f"resolves to .*, {reason}; web_fetch reads public"):
        await fetch(web_fetch_tool(), ctx, url)


async def test_refuses_the_metadata_host_name_before_resolving(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def resolver(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(host)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with pytest.raises(ToolError, match=r"metadata\.google\.internal is a cloud metadata service"):
        await fetch(web_fetch_tool(), ctx, "http://Metadata.Google.Internal./computeMetadata/v1/")
    assert asked == []


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "example.com"])
async def test_refuses_other_schemes(ctx: ToolContext, url: str) -> None:
    with pytest.raises(ToolError, match="http and https URLs only"):
        await fetch(web_fetch_tool(), ctx, url)


def test_public_addresses_pass_and_the_tool_is_a_read_only_fetch() -> None:
    for address in ("93.184.216.34", "2606:4700:4700::1111", "8.8.8.8"):
        assert address_refusal(ipaddress.ip_address(address)) is None
    tool = web_fetch_tool()
    assert tool.name == "web_fetch"
    assert tool.capabilities.read_only and tool.capabilities.kind is ToolKind.FETCH


def test_allow_entries() -> None:
    assert parse_allow_entry("Docs.Internal") == ("docs.internal", None)
    assert parse_allow_entry("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_allow_entry("[::1]:8080") == ("::1", 8080)
    assert parse_allow_entry("fd00::5") == ("fd00::5", None)
    with pytest.raises(ValueError, match="invalid port"):
        parse_allow_entry("host:http")


async def test_allow_list_is_per_port(ctx: ToolContext, port: int) -> None:
    tool = web_fetch_tool(allow_hosts=[f"127.0.0.1:{port + 1}"])
    with pytest.raises(ToolError, match="a loopback address"):
        await fetch(tool, ctx, f"http://127.0.0.1:{port}/page")


async def test_fetches_html_as_readable_text(
    fetch_local: Tool, ctx: ToolContext, port: int
) -> None:
    base = f"http://127.0.0.1:{port}"
    out = await fetch(fetch_local, ctx, f"{base}/page")
    assert not out.is_error
    assert out.content == (
        f"{base}/page: HTTP 200 OK, text/html\n\n"
        "Title: Docs\n\n"
        "# Getting started\n\n"
        f"Install it with pip, then read the guide ({base}/guide).\n\n"
        "- fast\n- small\n"
    )
    assert Handler.hosts == [f"127.0.0.1:{port}"]


async def test_other_text_comes_back_as_is_and_errors_are_flagged(
    fetch_local: Tool, ctx: ToolContext, port: int
) -> None:
    json_out = await fetch(fetch_local, ctx, f"http://127.0.0.1:{port}/json")
    assert json_out.content.endswith('application/json\n\n{"ok": true}')
    missing = await fetch(fetch_local, ctx, f"http://127.0.0.1:{port}/missing")
    assert missing.is_error
    assert "HTTP 404 Not Found" in missing.content and missing.content.endswith("no such page")


async def test_redirects_are_reported_not_followed(
    fetch_local: Tool, ctx: ToolContext, port: int
) -> None:
    out = await fetch(fetch_local, ctx, f"http://127.0.0.1:{port}/redirect")
    assert out.content == (
        f"http://127.0.0.1:{port}/redirect: HTTP 302 Found, a redirect to "
        f"http://127.0.0.1:{port}/page (not followed; call web_fetch with that URL to read it)"
    )
    assert len(Handler.hosts) == 1


async def test_large_bodies_are_cut_with_a_note(
    fetch_local: Tool, ctx: ToolContext, port: int
) -> None:
    out = await fetch(fetch_local, ctx, f"http://127.0.0.1:{port}/big")
    header, _, body = out.content.partition("\n\n")
    assert header.endswith("text/plain [cut: only the first 256 KiB were read]")
    assert len(body) == MAX_BODY_BYTES == 256 * 1024


@pytest.mark.parametrize(("path", "what"), [("/image", "image/png"), ("/untyped", "binary")])
async def test_binary_content_is_refused(
    fetch_local: Tool, ctx: ToolContext, port: int, path: str, what: str
) -> None:
    with pytest.raises(ToolError, match=f"is {what}.*, which web_fetch does not read"):
        await fetch(fetch_local, ctx, f"http://127.0.0.1:{port}{path}")


async def test_one_private_answer_among_public_ones_is_refused(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, port: int
) -> None:
    """A rebinding resolver answers a public address first and loopback second."""

    def rebinding(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    Handler.hosts.clear()
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with pytest.raises(ToolError, match=r"rebind\.test resolves to 127\.0\.0\.1, a loopback"):
        await fetch(web_fetch_tool(), ctx, f"http://rebind.test:{port}/page")
    assert Handler.hosts == []


async def test_the_connection_goes_to_the_checked_address(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, port: int
) -> None:
    """The name is resolved once; a later, different answer is never used."""
    answers: list[str] = ["127.0.0.1"]
    asked: list[str] = []
    real = socket.getaddrinfo

    def once(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        if host != "pinned.test":
            return real(host, *args, **kwargs)
        asked.append(host)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "rebound: resolved a second time")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers.pop(), port))]

    Handler.hosts.clear()
    monkeypatch.setattr(socket, "getaddrinfo", once)
    tool = web_fetch_tool(allow_hosts=["pinned.test"])
    out = await fetch(tool, ctx, f"http://pinned.test:{port}/page")
    assert out.content.startswith(f"http://pinned.test:{port}/page: HTTP 200 OK")
    assert "(http://pinned.test:" in out.content  # links resolve against the name, not the IP
    assert asked == ["pinned.test"]
    assert Handler.hosts == [f"pinned.test:{port}"]


async def test_https_requests_keep_the_name_for_tls() -> None:
    async with httpx.AsyncClient() as client:
        request = pinned_request(client, httpx.URL("https://Example.com/a?b=1"), "93.184.216.34")
        ipv6 = pinned_request(client, httpx.URL("http://example.com:8080/"), "2001:db8::1")
    assert str(request.url) == "https://93.184.216.34/a?b=1"
    assert request.headers["Host"] == "example.com"
    assert request.extensions["sni_hostname"] == "example.com"
    assert str(ipv6.url) == "http://[2001:db8::1]:8080/"
    assert ipv6.headers["Host"] == "example.com:8080"
    assert "sni_hostname" not in ipv6.extensions
