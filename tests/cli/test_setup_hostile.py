"""``openheim setup`` against odd files: a duplicated member on our path is refused (``--remove``
would leave a copy behind that a reader then keeps), deep nesting is a one-line refusal, a BOM
and CRLF line endings are kept; a FIFO, a folder or a file over the size limit is refused before
a byte is read, and a large value costs memory linear in its size."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from openheim.cli.setup_files import MAX_FILE_BYTES
from openheim.formats.jsonedit import JsonSyntax, parse
from tests.cli.test_setup_cli import CLAUDE, CODEX, OPENCODE, everything, setup, user_home, write

__all__ = ["user_home"]  # the fixture

DUPLICATED = [
    '{"mcpServers": {"openheim": {"a": 1}, "openheim": {"b": 2}}}\n',
    '{"mcpServers": {"openheim": {"a": 1}}, "mcpServers": {"x": {}}}\n',
]


@pytest.mark.parametrize("text", DUPLICATED)
@pytest.mark.parametrize("remove", [True, False])
def test_a_duplicated_member_on_our_path_is_refused(
    user_home: Path, capsys: pytest.CaptureFixture[str], text: str, remove: bool
) -> None:
    write(user_home, CLAUDE, text)
    code, out = setup("--only", "claude", *(["--remove"] if remove else []), capsys=capsys)
    assert code == 1
    assert "appears 2 times" in out and "fix the file" in out
    assert everything(user_home) == {CLAUDE: text.encode()}


def test_deep_nesting_is_a_one_line_refusal(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    write(user_home, CLAUDE, text)
    code, out = setup("--only", "claude", capsys=capsys)
    assert code == 1
    assert "nested deeper than" in out and "Traceback" not in out
    with pytest.raises(JsonSyntax):
        parse("[" * 10_000)


def test_a_bom_and_crlf_line_endings_are_kept(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(user_home, CLAUDE, "")
    (user_home / CLAUDE).write_bytes(b'\xef\xbb\xbf{\r\n  "numStartups": 7\r\n}\r\n')
    code, out = setup("--only", "claude", capsys=capsys)
    assert code == 0, out
    data = (user_home / CLAUDE).read_bytes()
    assert data.startswith(b'\xef\xbb\xbf{\r\n  "numStartups": 7,\r\n')
    assert b"\n" not in data.replace(b"\r\n", b"")  # no bare LF
    assert json.loads(data.decode("utf-8-sig"))["mcpServers"]["openheim"]["type"] == "stdio"


def test_a_read_only_file_is_refused_and_left_alone(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(user_home, CLAUDE, "{}\n")
    path.chmod(0o400)
    code, out = setup("--only", "claude", capsys=capsys)
    assert code == 1
    assert f"refused: {path} is read-only" in out and "chmod u+w" in out
    assert everything(user_home) == {CLAUDE: b"{}\n"}


def test_a_crlf_toml_file_stays_crlf(user_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(user_home, CODEX, "")
    path.write_bytes(b'model = "o3"\r\n\r\n[mcp_servers.other]\r\ncommand = "x"\r\n')
    code, out = setup("--only", "codex", capsys=capsys)
    assert code == 0, out
    data = path.read_bytes()
    assert data.startswith(b'model = "o3"\r\n\r\n[mcp_servers.other]\r\ncommand = "x"\r\n')
    assert b"[mcp_servers.openheim]\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    code, out = setup("--only", "codex", "--remove", capsys=capsys)
    assert code == 0, out
    assert path.read_bytes() == b'model = "o3"\r\n\r\n[mcp_servers.other]\r\ncommand = "x"\r\n'


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _over_the_limit(path: Path) -> None:
    with path.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_FILE_BYTES + 1)


HOSTILE: dict[str, tuple[str, str, Callable[[Path], None], str]] = {
    "claude FIFO": ("claude", CLAUDE, _fifo, "it is a FIFO, not a regular file"),
    "claude folder": ("claude", CLAUDE, _folder, "it is a folder, not a regular file"),
    "claude over 16 MiB": ("claude", CLAUDE, _over_the_limit, "it is larger than 16 MiB"),
    "codex FIFO": ("codex", CODEX, _fifo, "it is a FIFO, not a regular file"),
    "codex over 16 MiB": ("codex", CODEX, _over_the_limit, "it is larger than 16 MiB"),
    "opencode folder": ("opencode", OPENCODE, _folder, "it is a folder, not a regular file"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("client", "name", "plant", "reason"), HOSTILE.values(), ids=HOSTILE.keys()
)
def test_a_file_that_is_no_regular_file_of_bounded_size_is_refused_unread(
    user_home: Path,
    capsys: pytest.CaptureFixture[str],
    client: str,
    name: str,
    plant: Callable[[Path], None],
    reason: str,
) -> None:
    path = user_home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    plant(path)
    before = path.lstat()
    code, out = setup("--only", client, capsys=capsys)
    assert code == 1
    assert f"refused: {path}: {reason}" in out and "Traceback" not in out
    after = path.lstat()
    assert (after.st_mode, after.st_ino, after.st_size) == (
        before.st_mode,
        before.st_ino,
        before.st_size,
    )


BIG = 4 << 20
"""The length of one string value: far under the size limit, large enough to show the cost
per byte above what the interpreter itself holds."""
LARGE: dict[str, tuple[str, str, str]] = {
    "claude, plain": ("claude", CLAUDE, '{"big": "%s"}\n' % ("a" * BIG)),
    "claude, escapes": ("claude", CLAUDE, '{"big": "%s"}\n' % ("\\n" * (BIG // 2))),
    "opencode": ("opencode", OPENCODE, '{"big": "%s", // a comment\n}\n' % ("a" * BIG)),
    "codex": ("codex", CODEX, 'big = "%s"\n' % ("a" * BIG)),
}  # fmt: skip


@pytest.mark.parametrize(("client", "name", "text"), LARGE.values(), ids=LARGE.keys())
def test_a_large_value_costs_memory_linear_in_its_size(
    user_home: Path, capsys: pytest.CaptureFixture[str], client: str, name: str, text: str
) -> None:
    path = write(user_home, name, text)
    tracemalloc.start()
    try:
        code, out = setup("--only", client, capsys=capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0, out
    new = path.read_text()
    assert len(new) > len(text) and "openheim" in new[-1000:]  # the value kept, our entry added
    assert peak < 10 * len(text), f"{peak / len(text):.1f} bytes per byte of the file"
