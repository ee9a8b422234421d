"""A server's error body, or a completion answered whole, is read only up to a limit: an endless
body cannot fill the memory, and the error still quotes the start of what the server said."""

from __future__ import annotations

import asyncio
import json

import pytest

from openheim.errors import ProviderHTTPError, ProviderProtocolError
from openheim.providers import http_base
from openheim.providers.http import MAX_ERROR_BODY
from tests.providers.support import drain, request
from tests.providers.transport_server import Server, openai_at, read_request

CHUNK = 64 * 1024
MOST = 1024
"""Chunks the endless server sends at most (64 MiB), so a test without the limit ends too."""


def endless(status: bytes, content_type: bytes, first: bytes, sent: list[int]) -> Server:
    """A server answering every request with ``first`` and then chunks of spaces, until the
    client hangs up or ``MOST`` chunks went out; ``sent`` counts the bytes written."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 " + status + b"\r\nContent-Type: " + content_type
            + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"%x\r\n%s\r\n" % (len(first), first)
        )  # fmt: skip
        try:
            for _ in range(MOST):
                writer.write(b"%x\r\n%s\r\n" % (CHUNK, b" " * CHUNK))
                await writer.drain()
                sent[0] += CHUNK
        except ConnectionError:
            return

    return Server(handler)


async def test_an_endless_error_body_is_read_only_to_the_limit() -> None:
    sent = [0]
    message = json.dumps({"error": {"message": "overloaded, try later"}}).encode()
    async with endless(b"503 Busy", b"application/json", message, sent) as server:
        made = openai_at(server, 30.0)
        try:
            with pytest.raises(ProviderHTTPError) as caught:
                await drain(made, request())
        finally:
            await made.aclose()
    assert caught.value.status == 503
    assert "overloaded, try later" in str(caught.value)
    assert sent[0] < 32 * MAX_ERROR_BODY + 16 * 1024 * 1024  # what socket buffers held, at most


async def test_a_completion_over_the_whole_body_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_base, "MAX_WHOLE_BODY", 1024 * 1024)
    sent = [0]
    async with endless(b"200 OK", b"application/json", b'{"choices": [', sent) as server:
        made = openai_at(server, 30.0)
        try:
            with pytest.raises(ProviderProtocolError, match="a body over 1 MiB"):
                await drain(made, request())
        finally:
            await made.aclose()
    assert sent[0] < 32 * 1024 * 1024
