"""Frames holding strings that UTF-8 cannot carry as they are (a file name that is not UTF-8,
read back as lone surrogates) still reach the client, escaped, and the connection stays open."""

from __future__ import annotations

import os
from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.server.support import served


async def test_a_file_name_that_is_not_utf8_is_listed_and_the_connection_lives(
    home: Path, work: Path
) -> None:
    with open(os.path.join(os.fsencode(work), b"bad\xffname.txt"), "wb") as fh:
        fh.write(b"x")
    (work / "ok.txt").write_text("ok")
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            listing = await ws.call("fs", type="list", path=".")
            pong = await ws.call("system", type="ping")
    names = [entry["name"] for entry in listing["entries"]]
    assert "bad\udcffname.txt" in names and "ok.txt" in names
    assert pong["type"] == "pong"


async def test_an_id_with_a_lone_surrogate_is_echoed_and_the_connection_lives(
    home: Path, work: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            await ws.raw('{"channel": "system", "data": {"type": "ping", "id": "a\\udc80"}}')
            echoed = await ws.until(lambda data: data.get("type") == "pong")
            pong = await ws.call("system", type="ping")
    assert echoed["data"]["id"] == "a\udc80"
    assert pong["type"] == "pong"
