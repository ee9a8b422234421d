"""The ``fs`` channel's ``find`` (the web page's ``@`` picker): the work dir's files an ``@``
mention may name, best matches first; nothing git ignores, no secret, nothing behind a symlink
and nothing outside the work dir; a bad query refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.server import fs
from openheim.server.fs import MAX_FOUND
from openheim.testing import FakeLLMServer
from tests.server.support import served


@pytest.fixture
def project(work: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "main_secret.py").write_text("x")
    (work / "src" / "app").mkdir(parents=True)
    (work / "src" / "app" / "main.py").write_text("x")
    (work / "src" / "maintain.txt").write_text("x")
    (work / "README.md").write_text("x")
    (work / ".gitignore").write_text("build/\n")
    (work / "build").mkdir()
    (work / "build" / "main.py").write_text("x")
    (work / ".env").write_text("KEY=x")
    (work / "linked").symlink_to(outside)
    (work / "main_link.py").symlink_to(outside / "main_secret.py")
    return work


async def find(project: Path, home: Path, *queries: object) -> list[dict[str, object]]:
    with FakeLLMServer() as llm:
        async with served(home, project, llm) as server, server.socket() as ws:
            return [await ws.call("fs", type="find", query=query) for query in queries]


async def test_find_lists_matching_files_of_the_work_dir_only(project: Path, home: Path) -> None:
    everything, main, narrowed, none = await find(project, home, "", "main", "appmain", "zzz")
    assert everything == {
        "type": "found",
        "query": "",
        "paths": [".gitignore", "README.md", "src/maintain.txt", "src/app/main.py"],
        "id": everything["id"],
    }
    assert main["paths"] == ["src/app/main.py", "src/maintain.txt"]  # tightest, then shortest
    assert narrowed["paths"] == ["src/app/main.py"]
    assert none["paths"] == []


async def test_find_answers_at_most_max_found_paths(work: Path, home: Path) -> None:
    for n in range(MAX_FOUND + 10):
        (work / f"f{n:03}.txt").write_text("x")
    (found,) = await find(work, home, "f")
    assert found["paths"] == [f"f{n:03}.txt" for n in range(MAX_FOUND)]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (7, "query must be a string of at most 200 characters"),
        (["main"], "query must be a string of at most 200 characters"),
        ("m" * 201, "query must be a string of at most 200 characters"),
    ],
)
async def test_a_bad_query_is_refused_in_one_line(
    work: Path, home: Path, query: object, message: str
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            rid = await ws.send("fs", type="find", query=query)
            error = await ws.until(lambda d: d.get("id") == rid)
    assert error["data"] == {
        "type": "error",
        "message": message,
        "hint": "send the text typed after @ as query",
        "id": rid,
    }


async def test_typing_reuses_one_walk_until_it_is_stale(
    work: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "old.txt").write_text("x")
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            monkeypatch.setattr(fs, "FOUND_FRESH", 3600.0)
            first = await ws.call("fs", type="find", query="")
            (work / "new.txt").write_text("x")
            reused = await ws.call("fs", type="find", query="")
            monkeypatch.setattr(fs, "FOUND_FRESH", 0.0)
            walked = await ws.call("fs", type="find", query="")
    assert first["paths"] == reused["paths"] == ["old.txt"]
    assert walked["paths"] == ["new.txt", "old.txt"]
