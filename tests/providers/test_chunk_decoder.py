"""The chunked body decoded from whatever bytes arrived: the same payload however the bytes
split, and strict about every way a server can frame it wrong."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openheim.providers import http11
from openheim.providers.http11 import BodyReader, ChunkDecoder, ProtocolError, ResponseHead


def chunked(pieces: list[bytes], *, extension: bytes = b"", trailers: bytes = b"") -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces if p)
    return body + b"0\r\n" + trailers + b"\r\n"


def decode(data: list[bytes]) -> tuple[bytes, ChunkDecoder]:
    decoder = ChunkDecoder()
    out = b"".join(decoder.feed(piece) for piece in data if piece)
    return out, decoder


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_whole_chunks_one_per_feed_come_out_as_they_are() -> None:
    decoder = ChunkDecoder()
    assert decoder.feed(b"5\r\nfirst\r\n") == b"first"
    assert decoder.feed(b"6\r\nsecond\r\n") == b"second"
    assert decoder.feed(b"0\r\n\r\n") == b""
    assert decoder.done
    assert not decoder.extra


def test_several_chunks_in_one_feed_are_joined() -> None:
    out, decoder = decode([b"5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\n"])
    assert out == b"firstsecond"
    assert decoder.done


def test_every_split_of_a_stream_gives_the_same_payload() -> None:
    data = chunked([b"data: one\n\n", b"x" * 300, b"\r\n\r\n"], extension=b";a=b")
    data = data[:-2] + b"Trailer: yes\r\n\r\n"
    for cut in range(len(data) + 1):
        out, decoder = decode(split_at(data, [cut]))
        assert (out, decoder.done, decoder.extra) == (
            b"data: one\n\n" + b"x" * 300 + b"\r\n\r\n",
            True,
            False,
        ), cut
    out, decoder = decode([data[i : i + 1] for i in range(len(data))])
    assert out.endswith(b"\r\n\r\n") and decoder.done


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=500), max_size=8),
)
def test_any_chunks_split_anywhere_give_the_payload(pieces: list[bytes], cuts: list[int]) -> None:
    data = chunked(pieces)
    out, decoder = decode(split_at(data, [c for c in cuts if c <= len(data)]))
    assert out == b"".join(pieces)
    assert decoder.done and not decoder.extra


def test_bytes_after_the_last_chunk_are_noted() -> None:
    out, decoder = decode([b"2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"])
    assert (out, decoder.done, decoder.extra) == (b"ok", True, True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([b"zz\r\nok\r\n"], "bad chunk size"),
        ([b"\r\nok\r\n"], "bad chunk size"),
        ([b"-2\r\nok\r\n"], "bad chunk size"),
        ([b"1\r\nok\r\n0\r\n\r\n"], "longer than its size"),
        ([b"2\r\nok", b"x\r\n"], "longer than its size"),
        ([b"2\r\nok\r", b"x"], "longer than its size"),
        ([b"2\r\nokxy"], "longer than its size"),
        ([b"2" * 70000], "too long"),
        ([b"2\r\nok\r\n", b"0\r\n" + b"T" * 70000], "too long"),
    ],
)
def test_a_badly_framed_body_is_a_protocol_error(data: list[bytes], message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode(data)


def head(**headers: str) -> ResponseHead:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return ResponseHead(200, b"OK", raw, 1)


async def read_all(data: bytes, response: ResponseHead) -> tuple[list[bytes], BodyReader]:
    reader = asyncio.StreamReader(limit=http11.PIECE)
    reader.feed_data(data)
    reader.feed_eof()
    body = BodyReader(reader, response)
    pieces = []
    while piece := await body.read():
        pieces.append(piece)
    assert await body.read() == b""  # and stays ended
    return pieces, body


async def test_a_body_reader_decodes_chunks_and_notes_what_followed() -> None:
    pieces, body = await read_all(chunked([b"a", b"b"]), head(transfer_encoding="chunked"))
    assert (b"".join(pieces), body.overread) == (b"ab", False)
    pieces, body = await read_all(chunked([b"a"]) + b"more", head(transfer_encoding="chunked"))
    assert (b"".join(pieces), body.overread) == (b"a", True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"5\r\nab", "closed the connection inside a chunk$"),
        (b"2\r\nab", "closed the connection inside a chunk$"),
        (b"2\r\nab\r\n", "inside a chunked body"),
        (b"2\r\nab\r\n0\r\nTrailer: x\r\n", "inside a chunked body"),
    ],
)
async def test_a_chunked_body_cut_short_is_a_protocol_error(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        await read_all(data, head(transfer_encoding="chunked"))


async def test_a_sized_body_is_read_to_its_length_only() -> None:
    response = head(content_length="4")
    response.length = 4
    pieces, body = await read_all(b"abcdEXTRA", response)
    assert (b"".join(pieces), body.overread) == (b"abcd", False)
    with pytest.raises(ProtocolError, match="before the response ended"):
        await read_all(b"ab", response)


async def test_a_body_without_framing_is_read_until_the_close() -> None:
    pieces, _ = await read_all(b"all of it", head())
    assert b"".join(pieces) == b"all of it"
