"""``openheim setup`` against odd files: a duplicated member on our path is refused (``--remove``
would leave a copy behind that a reader then keeps), deep nesting is a one-line refusal, a BOM
and CRLF line endings are kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openheim.jsonedit import JsonSyntax, parse
from tests.test_setup_cli import CLAUDE, CODEX, everything, setup, user_home, write

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
