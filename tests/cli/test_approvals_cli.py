"""Approvals from the command line: headless fails closed, a terminal is asked (through a real
pseudo-terminal), "always" is remembered, and ``openheim permissions`` edits and explains rules."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, env_for, openheim

PROMPT_END = b"[c] cancel: "


def write(name: str, content: str = "hello\n") -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": content})])


CONTROLLING_TERMINAL = (
    "import fcntl, os, sys, termios; "
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'openheim', *sys.argv[1:]])"
)
"""Run in the child: make its stdin (the pty) its controlling terminal, then become openheim."""


def start_in_pty(
    args: list[str], env: dict[str, str], cwd: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``openheim ARGS`` with a new pty as its controlling terminal and stdio; the child
    and the pty's master side (the caller closes it)."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", CONTROLLING_TERMINAL, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    return child, master


def run_in_pty(args: list[str], env: dict[str, str], cwd: Path, answers: list[str]) -> Any:
    """Run openheim with a pseudo-terminal as its controlling terminal; answer each prompt.

    The child is started by ``subprocess`` in a new session (no ``fork()`` of this process,
    which has threads: the fake server's), and takes the pty as its terminal before it execs.
    """
    child, master = start_in_pty(args, env, cwd)
    try:
        output, asked = _converse(master, answers)
        return child.wait(timeout=60), output.decode(errors="replace"), asked
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        os.close(master)


def _converse(master: int, answers: list[str]) -> tuple[bytes, int]:
    """Read the terminal until the child closes it, answering each approval prompt."""
    output = b""
    asked = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 5)
        if not ready:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        output += data
        if output.count(PROMPT_END) > asked:
            os.write(master, answers[asked].encode() + b"\n")
            asked += 1
    return output, asked


def test_headless_ask_denies_at_once_with_its_exit_code(home: Path, work: Path) -> None:
    with FakeLLMServer([write("a.txt"), "could not write"]) as server:
        configure(home, server)
        result = openheim("run", "write a.txt", home=home, cwd=work)
    assert result.returncode == 6, result.stderr
    assert not (work / "a.txt").exists()
    told = [m for m in server.requests[1].messages if m.get("role") == "tool"]
    assert "no one to ask" in told[0]["content"]


def test_auto_mode_runs_the_write(home: Path, work: Path) -> None:
    with FakeLLMServer([write("a.txt"), "done"]) as server:
        configure(home, server)
        result = openheim("run", "--approve", "auto", "write a.txt", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert (work / "a.txt").read_text() == "hello\n"


def test_edits_mode_runs_the_write_and_refuses_the_command_headless(home: Path, work: Path) -> None:
    shell = FakeReply(tool_calls=[FakeToolCall("execute_command", {"command": "echo x > b.txt"})])
    with FakeLLMServer([write("a.txt"), shell, "done"]) as server:
        configure(home, server)
        result = openheim(
            "run", "--allow-shell", "--approve", "edits", "write", home=home, cwd=work
        )
        told = [m["content"] for m in server.requests[2].messages if m.get("role") == "tool"]
    assert (work / "a.txt").read_text() == "hello\n"  # an edit: not asked
    assert not (work / "b.txt").exists()  # a command: asked, and no one could answer
    assert "no one to ask" in told[1] and "no one to ask" not in told[0]
    assert result.returncode == 6 and "pass --approve auto" in result.stderr


LISTED = "'ask', 'edits', 'auto', 'deny'"


@pytest.mark.parametrize(
    ("args", "config", "error"),
    [
        (["--approve", "edit"], "", f"--approve: invalid choice: 'edit' (choose from {LISTED})"),
        ([], 'approval = "edit"\n', f"approval: must be one of {LISTED}, got 'edit'"),
    ],
)  # fmt: skip
def test_a_bad_mode_is_refused_with_the_modes(
    home: Path, work: Path, args: list[str], config: str, error: str
) -> None:
    (home / "config.toml").write_text(config)
    result = openheim("run", *args, "hi", home=home, cwd=work)
    assert result.returncode == 2 and error in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_mode_is_named_plainly(home: Path, work: Path) -> None:
    (home / "config.toml").write_text('approval = "edits"\n')
    listed = openheim("permissions", "list", home=home, cwd=work)
    assert "approval mode: auto for edits" in listed.stdout, listed.stderr


def test_risky_commands_are_refused_even_in_auto_mode(home: Path, work: Path) -> None:
    call = FakeToolCall("execute_command", {"command": "rm -rf /"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), "ok"]) as server:
        configure(home, server)
        result = openheim(
            "run", "--allow-shell", "--approve", "auto", "clean up", home=home, cwd=work
        )
    assert result.returncode == 6
    told = next(m for m in server.requests[1].messages if m.get("role") == "tool")["content"]
    assert "rm -rf" in told and "outside" in told


@pytest.mark.parametrize(
    ("answer", "code", "written", "told"),
    [
        ("y", 0, True, "wrote"),
        ("n", 6, False, "denied: the user rejected this tool call"),
        ("n use b.txt", 6, False, "rejected this tool call, saying: use b.txt"),
        ("r", 6, False, "will reject calls like it for the rest of the session"),
        ("c", 130, False, None),
    ],
)
def test_the_terminal_is_asked(
    home: Path, work: Path, answer: str, code: int, written: bool, told: str | None
) -> None:
    with FakeLLMServer([write("a.txt"), "done"], default="done") as server:
        configure(home, server)
        status, output, asked = run_in_pty(["run", "write it"], env_for(home), work, [answer])
        results = [m for r in server.requests for m in r.messages if m.get("role") == "tool"]
    assert asked == 1 and "Allow openheim to write a.txt?" in output
    assert "+hello" in output  # the diff of the change is shown
    assert status == code, output
    assert (work / "a.txt").exists() is written
    if told is not None:
        assert told in results[0]["content"]


def test_always_is_remembered(home: Path, work: Path) -> None:
    replies: list[Any] = [write("a.txt"), write("b.txt", "second\n"), "done"]
    own = "# the project's rules, by hand\n[rules]\ndeny = ['command \"git push\"']  # never\n"
    (work / ".openheim").mkdir()
    (work / ".openheim" / "permissions.toml").write_text(own)
    with FakeLLMServer(replies) as server:
        configure(home, server)
        args = ["run", "--remember", "write both"]
        status, output, asked = run_in_pty(args, env_for(home), work, ["a"])
    assert status == 0, output
    assert asked == 1  # the second write was allowed by the new rule
    assert (work / "b.txt").read_text() == "second\n"
    saved = (work / ".openheim" / "permissions.toml").read_text()
    assert "write_file" in saved and "openheim trust" in output
    assert saved.startswith(own.removesuffix("\n"))  # the file's own comments are kept
    assert openheim("trust", home=home, cwd=work).returncode == 0
    check = openheim(
        "permissions",
        "check",
        "write_file",
        '{"path": "c.txt", "content": "x"}',
        home=home,
        cwd=work,
    )
    assert check.stdout.startswith("allow") and "write_file" in check.stdout


def test_permissions_add_check_remove(home: Path, work: Path) -> None:
    added = openheim("permissions", "add", 'allow command "git status"', home=home, cwd=work)
    assert added.returncode == 0 and "added" in added.stdout
    ok = openheim(
        "permissions", "check", "execute_command", '{"command": "git status"}', home=home, cwd=work
    )
    assert ok.stdout.startswith("allow") and 'allow command "git status"' in ok.stdout
    chained = '{"command": "git status; rm -rf x"}'
    mixed = openheim("permissions", "check", "execute_command", chained, home=home, cwd=work)
    assert not mixed.stdout.startswith("allow")
    listed = openheim("permissions", "list", home=home, cwd=work)
    assert 'allow command "git status"' in listed.stdout and "approval mode: ask" in listed.stdout
    removed = openheim("permissions", "remove", 'allow command "git status"', home=home, cwd=work)
    assert removed.returncode == 0 and "removed" in removed.stdout
    bad = openheim("permissions", "add", "allow wizard x", home=home, cwd=work)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_untrusted_project_cannot_loosen_approval(home: Path, work: Path) -> None:
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text('approval = "auto"\n')
    (work / ".openheim" / "permissions.toml").write_text(
        "[rules]\nallow = ['tool \"write_file\"']\n"
    )
    with FakeLLMServer([write("a.txt"), "done"]) as server:
        configure(home, server)
        result = openheim("run", "write", home=home, cwd=work)
    assert result.returncode == 6  # still asked (headless: denied)
    assert "openheim trust" in result.stderr
    assert not (work / "a.txt").exists()


def staged_config(home: Path) -> None:
    text = (home / "config.toml").read_text()
    (home / "config.toml").write_text('file_changes = "staged"\n' + text)


def apply_token(request: Any) -> FakeReply:
    token = re.search(r"chg_[0-9a-f]+", request.last_tool_result or "")
    assert token, request.last_tool_result
    return FakeReply(tool_calls=[FakeToolCall("apply_file_change", {"token": token[0]})])


def preview_and_apply(*paths: str, content: str = "staged\n") -> list[Any]:
    """The model's script: preview each path's new content, apply its token, then answer."""
    steps: list[Any] = []
    for path in paths:
        call = FakeToolCall("preview_write_file", {"path": path, "content": content})
        steps += [FakeReply(tool_calls=[call]), apply_token]
    return [*steps, "done"]


PLANTED = (".openheim/permissions.toml", ".git/hooks/post-checkout", "a.txt")


def test_a_staged_change_is_not_applied_headless_in_ask_mode(home: Path, work: Path) -> None:
    with FakeLLMServer(preview_and_apply(*PLANTED)) as server:
        configure(home, server)
        staged_config(home)
        result = openheim("run", "stage it", home=home, cwd=work)
    assert result.returncode == 6, result.stderr
    assert [p for p in PLANTED if (work / p).exists()] == []
    names = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert "write_file" not in names and "apply_file_change" in names
    assert 'allow path "a.txt"' in result.stderr


def test_auto_mode_applies_staged_changes_except_to_protected_paths(home: Path, work: Path) -> None:
    with FakeLLMServer(preview_and_apply(*PLANTED)) as server:
        configure(home, server)
        staged_config(home)
        result = openheim("run", "--approve", "auto", "stage it", home=home, cwd=work)
    assert result.returncode == 6, result.stderr
    assert (work / "a.txt").read_text() == "staged\n"
    assert not (work / ".openheim").exists() and not (work / ".git").exists()


def test_the_terminal_is_asked_before_a_staged_change_is_applied(home: Path, work: Path) -> None:
    with FakeLLMServer(preview_and_apply("a.txt"), default="done") as server:
        configure(home, server)
        staged_config(home)
        status, output, asked = run_in_pty(["run", "stage it"], env_for(home), work, ["y"])
    assert status == 0, output
    assert asked == 1 and "Allow openheim to use apply_file_change?" in output
    assert "+staged" in output  # the staged diff is shown
    assert (work / "a.txt").read_text() == "staged\n"


def test_auto_mode_asks_before_changing_git_config(home: Path, work: Path) -> None:
    """Shell off, auto mode: edit_file on .git/config would set core.fsmonitor, which runs at
    the next git status. Headless it is refused; the rule named in the refusal allows it."""
    (work / ".git").mkdir()
    (work / ".git/config").write_text("[core]\n\tbare = false\n")
    args = {"path": ".git/config", "old_string": "bare = false", "new_string": "fsmonitor = x"}
    edit = FakeReply(tool_calls=[FakeToolCall("edit_file", args)])
    with FakeLLMServer([edit, "done", edit, "done"]) as server:
        configure(home, server)
        refused = openheim("run", "--approve", "auto", "edit", home=home, cwd=work)
        assert refused.returncode == 6, refused.stderr
        assert (work / ".git/config").read_text() == "[core]\n\tbare = false\n"
        command = "openheim permissions add 'allow path \".git/config\"'"
        assert f"  {command}\n" in refused.stderr
        added = openheim(*shlex.split(command)[1:], home=home, cwd=work)
        assert added.returncode == 0, added.stderr
        allowed = openheim("run", "--approve", "auto", "edit", home=home, cwd=work)
    assert allowed.returncode == 0, allowed.stderr
    assert "fsmonitor = x" in (work / ".git/config").read_text()


def test_a_headless_refusal_says_how_to_proceed(home: Path, work: Path) -> None:
    with FakeLLMServer([write("a.txt"), "I wrote a.txt", write("a.txt"), "ok"]) as server:
        configure(home, server)
        refused = openheim("run", "write a.txt", home=home, cwd=work)
        told = next(m for m in server.requests[1].messages if m.get("role") == "tool")
        lines = refused.stderr.splitlines()
        assert refused.returncode == 6
        assert "denied: denied" not in refused.stderr
        assert "  ✗ write_file: denied: write_file needs approval (the approval mode is ask" in (
            refused.stderr
        )
        rule = "openheim permissions add 'allow path \"a.txt\"'"
        for way in ("in a terminal", "--approve auto", rule):
            assert way in told["content"] and way in refused.stderr, way
        assert lines[-2] == f"  {rule}"
        assert lines[-1] == (
            "openheim: 1 tool call was denied; the answer above may describe work that was refused"
        )
        assert refused.stderr.count("--approve auto") == 1  # once at exit, not per call
        added = openheim(*shlex.split(rule)[1:], home=home, cwd=work)
        assert added.returncode == 0
        allowed = openheim("run", "write a.txt", home=home, cwd=work)
    assert allowed.returncode == 0, allowed.stderr
    assert (work / "a.txt").read_text() == "hello\n"
    assert "may describe work" not in allowed.stderr
