"""``openheim setup`` against temporary homes: fresh files, files with other servers and
comments, malformed files, symlinks, other users' files, ``--dry-run``, idempotence and
``--remove``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from openheim.cli.main import main
from openheim.formats import jsonedit

CLAUDE = ".claude.json"
CODEX = ".codex/config.toml"
OPENCODE = ".config/opencode/opencode.json"

CLAUDE_TEXT = """{
  "numStartups": 7,
  "mcpServers": {
    "other": {"type": "stdio", "command": "other-server", "args": []}
  },
  "projects": {}
}
"""
CODEX_TEXT = """# my Codex settings
model = "o3"  # the one I like

[mcp_servers.other]
# started by hand
command = "other-server"
args = ["--quiet"]
"""
OPENCODE_TEXT = """{
  // my OpenCode
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "other": {"type": "local", "command": ["other-server"]}, // keep me
  },
}
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "user"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("OPENHEIM_HOME", raising=False)
    return path


def write(home: Path, name: str, text: str) -> Path:
    path = home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_all(home: Path) -> dict[str, str]:
    """Each client's file with other servers and comments; the texts by file."""
    originals = {CLAUDE: CLAUDE_TEXT, CODEX: CODEX_TEXT, OPENCODE: OPENCODE_TEXT}
    for name, text in originals.items():
        write(home, name, text)
    return originals


def setup(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["setup", *args])
    return code, capsys.readouterr().out


def everything(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def command() -> list[str]:
    return [sys.executable, "-m", "openheim", "mcp", "serve"]


def test_fresh_files_get_our_entry_each(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = setup(capsys=capsys)
    assert code == 0
    assert out.count("added to") == 3
    claude = json.loads((user_home / CLAUDE).read_text())
    args = command()[1:]
    entry = {"type": "stdio", "command": sys.executable, "args": args, "env": {}}
    assert claude == {"mcpServers": {"openheim": entry}}
    codex = tomllib.loads((user_home / CODEX).read_text())
    approve = {"default_tools_approval_mode": "approve"}  # `codex exec` never asks
    assert codex == {
        "mcp_servers": {"openheim": {"command": sys.executable, "args": args, **approve}}
    }
    opencode = json.loads((user_home / OPENCODE).read_text())
    assert opencode["mcp"]["openheim"] == {"type": "local", "command": command(), "enabled": True}
    for name in (CLAUDE, CODEX, OPENCODE):
        assert (user_home / name).stat().st_mode & 0o777 == 0o600


def test_existing_files_keep_every_other_byte(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    originals = write_all(user_home)
    code, out = setup(capsys=capsys)
    assert code == 0, out
    claude = (user_home / CLAUDE).read_text()
    assert json.loads(claude)["mcpServers"]["other"]["command"] == "other-server"
    assert jsonedit.drop_member(claude, ("mcpServers", "openheim")) == CLAUDE_TEXT
    codex = (user_home / CODEX).read_text()
    assert codex.startswith(CODEX_TEXT)
    assert tomllib.loads(codex)["mcp_servers"]["openheim"]["args"] == command()[1:]
    opencode = (user_home / OPENCODE).read_text()
    assert "// keep me" in opencode and "// my OpenCode" in opencode
    assert jsonedit.drop_member(opencode, ("mcp", "openheim"), jsonc=True) == OPENCODE_TEXT
    for name, text in originals.items():  # each old file is kept as a backup
        backups = list((user_home / name).parent.glob(f"{Path(name).name}.*.bak"))
        assert [b.read_text() for b in backups] == [text]


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (CLAUDE, '{\n  "mcpServers": {\n    "other": {,}\n  }\n}\n', 3),
        (CODEX, 'model = "o3"\n[mcp_servers.other\ncommand = "x"\n', 2),
        (OPENCODE, '{\n  // fine\n  "mcp": {\n  "a": tru\n}\n', 4),
    ],
)
def test_a_malformed_file_is_refused_and_left_byte_for_byte(
    user_home: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, line: int
) -> None:
    write(user_home, name, text)
    client = name.split("/")[-1].lstrip(".").split(".")[0].replace("config", "codex")
    code, out = setup("--only", client, capsys=capsys)
    assert code == 1
    assert f"refused: {user_home / name}" in out
    assert f"line {line}" in out
    assert "fix the file" in out
    assert everything(user_home) == {name: text.encode()}


def test_a_symlink_is_refused_and_its_target_untouched(
    user_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(CLAUDE_TEXT)
    (user_home / CLAUDE).symlink_to(target)
    code, out = setup("--only", "claude", capsys=capsys)
    assert code == 1
    assert f"claude: refused: {user_home / CLAUDE} is a symlink" in out
    assert target.read_text() == CLAUDE_TEXT
    assert (user_home / CLAUDE).is_symlink()


def test_a_file_of_another_user_is_refused(
    user_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(user_home, CODEX, CODEX_TEXT)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(user_home).st_uid + 1)
    code, out = setup("--only", "codex", capsys=capsys)
    assert code == 1
    assert "belongs to another user" in out
    assert everything(user_home) == {CODEX: CODEX_TEXT.encode()}


def test_dry_run_prints_the_diff_and_writes_nothing(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(user_home, CODEX, CODEX_TEXT)
    before = everything(user_home)
    code, out = setup("--dry-run", capsys=capsys)
    assert code == 0
    assert everything(user_home) == before
    assert f"--- {user_home / CODEX}\n+++ {user_home / CODEX} (new)\n" in out
    assert "+[mcp_servers.openheim]\n" in out
    assert f'+command = "{sys.executable}"\n' in out or f"+command = '{sys.executable}'\n" in out
    assert out.count("dry run: nothing written") == 3


def test_a_second_run_changes_nothing(user_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(user_home, CLAUDE, CLAUDE_TEXT)
    write(user_home, OPENCODE, OPENCODE_TEXT)
    assert setup(capsys=capsys)[0] == 0
    after_first = everything(user_home)
    code, out = setup(capsys=capsys)
    assert code == 0
    assert out.count("unchanged") == 3
    assert everything(user_home) == after_first


def test_remove_takes_out_only_our_entry(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    originals = write_all(user_home)
    assert setup(capsys=capsys)[0] == 0
    code, out = setup("--remove", capsys=capsys)
    assert code == 0
    assert out.count("removed from") == 3
    for name, text in originals.items():
        assert (user_home / name).read_text() == text
    code, out = setup("--remove", capsys=capsys)
    assert out.count("unchanged") == 3


def test_remove_without_files_writes_none(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = setup("--remove", capsys=capsys)
    assert code == 0
    assert out.count("unchanged (no ") == 3
    assert everything(user_home) == {}


def test_only_picks_clients_and_refuses_unknown_names(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert setup("--only", "codex", capsys=capsys)[0] == 0
    assert list(everything(user_home)) == [CODEX]
    assert main(["setup", "--only", "codex,vim"]) == 2
    assert "--only names no known client: vim" in capsys.readouterr().err


def test_an_outdated_entry_is_updated_in_place(
    user_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = '{"mcpServers": {\n    "openheim": {"command": "/old/openheim"},\n    "b": {}\n  }\n}\n'
    write(user_home, CLAUDE, old)
    code, out = setup("--only", "claude", capsys=capsys)
    assert code == 0
    assert "updated in" in out
    text = (user_home / CLAUDE).read_text()
    assert json.loads(text)["mcpServers"]["openheim"]["command"] == sys.executable
    assert list(json.loads(text)["mcpServers"]) == ["openheim", "b"]


def test_a_set_openheim_home_goes_with_the_entry(
    user_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENHEIM_HOME", str(user_home / "oh"))
    assert setup(capsys=capsys)[0] == 0
    env = {"OPENHEIM_HOME": str(user_home / "oh")}
    assert json.loads((user_home / CLAUDE).read_text())["mcpServers"]["openheim"]["env"] == env
    assert tomllib.loads((user_home / CODEX).read_text())["mcp_servers"]["openheim"]["env"] == env
    opencode = json.loads((user_home / OPENCODE).read_text())["mcp"]["openheim"]
    assert opencode["environment"] == env


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_the_backup_keeps_the_files_own_mode(
    user_home: Path, capsys: pytest.CaptureFixture[str], mode: int
) -> None:
    """The backup may hold tokens: it is no more readable than the file it copies."""
    path = write(user_home, CLAUDE, CLAUDE_TEXT)
    path.chmod(mode)
    assert setup("--only", "claude", capsys=capsys)[0] == 0
    [backup] = path.parent.glob(f"{path.name}.*.bak")
    assert backup.read_text() == CLAUDE_TEXT
    assert backup.stat().st_mode & 0o777 == mode


def test_the_program_registers_how_it_was_started(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    done = subprocess.run(
        [sys.executable, "-m", "openheim", "setup", "--only", "claude"],
        env={**env, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / CLAUDE).read_text())["mcpServers"]["openheim"]
    assert [entry["command"], *entry["args"]] == command()
