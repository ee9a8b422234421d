"""The ``fs`` channel of ``/ws``: every operation, and the sandbox's escapes refused by each."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer
from tests.server.support import Socket, served
from tests.tools.test_sandbox import LEXICAL_ESCAPES

LINKS = ["etc_link/passwd", "out_dir/secret.txt", "chain1/secret.txt", "dangling/x", "out_file"]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("secret")
    return place


@pytest.fixture
def tree(work: Path, outside: Path) -> Path:
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "sub" / "file.txt").write_text("inside")
    (work / "top.txt").write_text("top")
    (work / "etc_link").symlink_to("/etc")
    (work / "out_dir").symlink_to(outside)
    (work / "chain2").symlink_to(outside)
    (work / "chain1").symlink_to(work / "chain2")
    (work / "dangling").symlink_to(work / "nowhere")
    (work / "out_file").symlink_to(outside / "secret.txt")
    return work


def requests_for(path: str) -> list[dict[str, object]]:
    return [
        {"type": "list", "path": path},
        {"type": "list", "path": path, "recursive": True},
        {"type": "read", "path": path},
        {"type": "write", "path": path, "content": "pwned"},
        {"type": "mkdir", "path": path + "/new"},
        {"type": "watch", "path": path},
        {"type": "rename", "path": "top.txt", "to": path},
    ]


async def refused(ws: Socket, request: dict[str, object]) -> bool:
    reply = await ws.call("fs", **request)
    return reply["type"] == "error" and bool(reply["message"])


@pytest.mark.parametrize("path", LEXICAL_ESCAPES + LINKS)
async def test_every_escape_is_refused_by_every_operation(
    home: Path, tree: Path, outside: Path, path: str
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            results = {str(r): await refused(ws, r) for r in requests_for(path)}
            if path not in LINKS:  # delete and rename act on a link itself, tested below
                for op in ("delete", "rename"):
                    request: dict[str, object] = {"type": op, "path": path, "to": "moved"}
                    results[op] = await refused(ws, request)
    allowed = [r for r, ok in results.items() if not ok]
    if path == "out_file":  # renaming onto an existing link is refused as an existing name
        allowed = [r for r in allowed if "rename" not in r]
    assert not allowed, allowed
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (tree / "top.txt").read_text() == "top"


async def test_operations_inside_the_work_dir(home: Path, tree: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            listing = await ws.call("fs", type="list", path=".")
            deep = await ws.call("fs", type="list", path="sub", recursive=True)
            read = await ws.call("fs", type="read", path="sub/file.txt")
            written = await ws.call("fs", type="write", path="new/dir/a.txt", content="hello")
            made = await ws.call("fs", type="mkdir", path="made")
            renamed = await ws.call("fs", type="rename", path="new/dir/a.txt", to="made/b.txt")
            clash = await ws.call("fs", type="rename", path="top.txt", to="made/b.txt")
            deleted = await ws.call("fs", type="delete", path="new")
    names = {e["name"]: e["type"] for e in listing["entries"]}
    assert names["sub"] == "dir" and names["top.txt"] == "file"
    assert names["out_dir"] == "symlink"
    assert [e["path"] for e in deep["entries"]] == ["sub/deeper", "sub/file.txt"]
    assert read["content"] == "inside" and read["encoding"] == "utf-8"
    assert written["type"] == "written" and made["path"] == "made"
    assert renamed["path"] == "made/b.txt" and (tree / "made" / "b.txt").read_text() == "hello"
    assert clash["type"] == "error" and (tree / "top.txt").exists()
    assert deleted["type"] == "deleted" and not (tree / "new").exists()
    assert all(r["id"] for r in (listing, deep, read, written, made, renamed, clash, deleted))


async def test_delete_and_rename_act_on_links_not_targets(
    home: Path, tree: Path, outside: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            gone = await ws.call("fs", type="delete", path="out_dir")
            moved = await ws.call("fs", type="rename", path="out_file", to="renamed_link")
            dangling = await ws.call("fs", type="delete", path="dangling")
    assert gone["type"] == "deleted" and not os.path.lexists(tree / "out_dir")
    assert moved["type"] == "renamed" and (tree / "renamed_link").is_symlink()
    assert dangling["type"] == "deleted"
    assert (outside / "secret.txt").read_text() == "secret"


@pytest.mark.parametrize("path", [".", "", "sub/..", "./", "WORK"])
async def test_the_work_dir_itself_cannot_be_deleted_or_renamed(
    home: Path, tree: Path, path: str
) -> None:
    path = str(tree.resolve()) if path == "WORK" else path
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            delete = await ws.call("fs", type="delete", path=path)
            rename = await ws.call("fs", type="rename", path=path, to="elsewhere")
    assert delete["type"] == "error" and rename["type"] == "error"
    assert (tree / "top.txt").exists() and not (tree / "elsewhere").exists()


async def test_secret_files_are_not_read(home: Path, tree: Path) -> None:
    (tree / ".env").write_text("API_KEY=x")
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            reply = await ws.call("fs", type="read", path=".env")
    assert reply["type"] == "error" and "secret" in reply["message"]


async def test_watch_pushes_fs_events_until_unwatched(home: Path, tree: Path) -> None:
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            watching = await ws.call("fs", type="watch", path="sub")
            (tree / "sub" / "fresh.txt").write_text("x")
            event = await ws.until(lambda d: d.get("type") == "fs_event")
            unwatched = await ws.call("fs", type="unwatch", path="sub")
            again = await ws.call("fs", type="unwatch", path="sub")
    assert watching == {"type": "watching", "path": "sub", "id": watching["id"]}
    assert {"change": "added", "path": "sub/fresh.txt"} in event["data"]["changes"]
    assert unwatched["type"] == "unwatched" and again["type"] == "error"


async def test_fifos_are_refused_at_once_and_hard_links_never_written_through(
    home: Path, tree: Path, outside: Path
) -> None:
    os.mkfifo(tree / "pipe")
    os.link(outside / "secret.txt", tree / "linked.txt")
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            async with asyncio.timeout(5):  # a FIFO with no writer must not block the read
                read = await ws.call("fs", type="read", path="pipe")
                wrote = await ws.call("fs", type="write", path="linked.txt", content="pwned")
            assert read["type"] == "error" and "pipe" in read["message"]
            assert wrote["type"] == "written"
    assert (outside / "secret.txt").read_text() == "secret"
    assert (tree / "linked.txt").read_text() == "pwned"


async def test_a_secret_file_cannot_be_renamed_to_a_readable_name(home: Path, tree: Path) -> None:
    (tree / ".env").write_text("API_KEY=hunter2-but-longer")
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            out = await ws.call("fs", type="rename", path=".env", to="plain.txt")
            back = await ws.call("fs", type="rename", path="top.txt", to="sub/.env")
            read = await ws.call("fs", type="read", path="plain.txt")
    assert out["type"] == "error" and "secret" in out["message"], out
    assert back["type"] == "error" and "secret" in back["message"], back
    assert read["type"] == "error"
    assert (tree / ".env").read_text() == "API_KEY=hunter2-but-longer"
    assert (tree / "top.txt").read_text() == "top"


async def test_watch_never_reports_changes_behind_a_symlink_out(
    home: Path, tree: Path, outside: Path
) -> None:
    with FakeLLMServer() as llm:
        async with served(home, tree, llm) as server, server.socket() as ws:
            await ws.call("fs", type="watch", path=".")
            (outside / "private-name.txt").write_text("x")
            (tree / "sub" / "marker.txt").write_text("x")
            await ws.until(
                lambda d: (
                    d.get("type") == "fs_event"
                    and any(c["path"] == "sub/marker.txt" for c in d["changes"])
                )
            )
            seen = [f for f in ws.seen if f["data"].get("type") == "fs_event"]
    paths = [c["path"] for frame in seen for c in frame["data"]["changes"]]
    assert not [p for p in paths if "private-name" in p], paths


SECRETS = 'deny_read = ["secrets/**"]'
MOVES_PAST_DENY_READ = [
    # (deny_read config, files made, rename from, rename to, a file that must stay unreadable)
    (SECRETS, ["secrets/key.txt"], "secrets", "public", "public/key.txt"),
    (None, [".aws/credentials"], ".aws", "aws", "aws/credentials"),
    (None, [".ssh/config"], ".ssh", "ssh", "ssh/config"),
    (None, ["sub/deeper/.env"], "sub", "moved", "moved/deeper/.env"),
    (None, ["keys/.git/x.pem"], "keys", "keys2", "keys2/.git/x.pem"),
    (SECRETS, ["secrets/key.txt"], "secrets/key.txt", "key.txt", "key.txt"),
    (None, [".env"], ".env", "plain.txt", "plain.txt"),
    (SECRETS, ["notes.txt", "secrets/k"], "notes.txt", "secrets/notes.txt", ""),
    (SECRETS, ["pub/a.txt", "secrets/k"], "pub", "secrets/pub", ""),
    (SECRETS, ["secrets/key.txt"], "secrets", "pub/secrets", "pub/secrets/key.txt"),
]


@pytest.mark.parametrize(("deny", "files", "source", "target", "hidden"), MOVES_PAST_DENY_READ)
async def test_a_move_never_takes_a_path_out_of_or_into_deny_read(
    home: Path,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    deny: str | None,
    files: list[str],
    source: str,
    target: str,
    hidden: str,
) -> None:
    monkeypatch.setenv("HOME", str(work))  # the work dir is the home folder: ~/.aws, ~/.ssh
    (work / "pub").mkdir()
    for name in files:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("aws_secret_access_key = plain-words-not-a-key-format\n")
    with FakeLLMServer() as llm:
        async with served(home, work, llm, extra=deny or "") as server, server.socket() as ws:
            moved = await ws.call("fs", type="rename", path=source, to=target)
            read = await ws.call("fs", type="read", path=hidden) if hidden else moved
    assert moved["type"] == "error" and "deny_read" in moved["message"], moved
    assert "plain-words" not in str(read)
    assert all((work / name).is_file() for name in files)  # nothing moved
    assert not (work / target).exists()


async def test_a_move_over_the_walk_bound_is_refused(
    home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openheim.server import fs_ops

    monkeypatch.setattr(fs_ops, "MAX_MOVED", 3)
    for i in range(4):
        (work / "many" / f"f{i}.txt").parent.mkdir(exist_ok=True)
        (work / "many" / f"f{i}.txt").write_text("x")
    (work / "few").mkdir()
    (work / "few" / "a.txt").write_text("x")
    with FakeLLMServer() as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            many = await ws.call("fs", type="rename", path="many", to="many2")
            few = await ws.call("fs", type="rename", path="few", to="few2")
    assert many["type"] == "error" and "more than 3" in many["message"], many
    assert (work / "many").is_dir() and not (work / "many2").exists()
    assert few["type"] == "renamed" and (work / "few2" / "a.txt").is_file()
