"""The OS sandbox of ``execute_command`` (bwrap), on this machine's kernel.

``ESCAPES`` is the table of attempts to get out: each runs confined, where it must fail, and
unconfined, where it must succeed, which proves the attempt is real. Adding one is one line.
The sandbox must work here: CI installs bubblewrap, and these tests fail rather than skip.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from openheim.errors import ToolError
from openheim.process.child_env import child_env
from openheim.tools import shell_sandbox
from openheim.tools.base import ToolContext, ToolOutput
from openheim.tools.builtin import shell
from openheim.tools.builtin.shell import execute_command
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import SandboxMode, ShellSandbox, unavailable
from tests.tools.support import call

KEY = "sk-sandbox-probe-" + "Q7w8E9r0T1y2U3i4O5p6A7s8"
HIDDEN_TEXT = "contents-of-a-hidden-file"


PYTHON = getattr(sys, "_base_executable", sys.executable)
"""An interpreter for the commands (only the standard library): the base one, since a virtual
environment under /tmp is out of a confined command's sight (it gets a private /tmp)."""


@dataclass
class Target:
    """What the escapes aim at: a process holding a key, places outside, a loopback server."""

    outside: Path
    """A folder beside the work dir, in /tmp."""
    home_file: Path
    """A file to create in the home folder (not a temp dir)."""
    victim: subprocess.Popen[bytes]
    """A process with ``KEY`` in its environment, as openheim has its provider key."""
    port: int
    socket: Path
    """A Unix socket a service listens on, in /run (or the user's runtime dir under it)."""
    hidden: Path
    sleep_arg: str
    connections: list[str] = field(default_factory=list)

    def fill(self, command: str) -> str:
        python = PYTHON
        connect = f"socket.create_connection(('127.0.0.1', {self.port}), 3)"
        unix = f"socket.socket(socket.AF_UNIX).connect('{self.socket}')"
        return command.format(
            connect_unix=f'{python} -c "import socket; {unix}"',
            proc=f"/proc/{self.victim.pid}",
            pid=self.victim.pid,
            outside=self.outside,
            home_file=self.home_file,
            connect=f'{python} -c "import socket; {connect}"',
            hidden=self.hidden,
            sleep=f"sleep {self.sleep_arg}",
            until_sleeping=f"until pgrep -fx 'sleep {self.sleep_arg}'; do sleep 0.01; done",
        )


def decoded(out: ToolOutput) -> str:
    """The command's stdout, base64-decoded (the escapes encode what they read)."""
    stdout = out.content.split("--- stdout ---\n", 1)[1].split("\n--- stderr ---", 1)[0].strip()
    try:
        return base64.b64decode(stdout + "=" * (-len(stdout) % 4)).decode("utf-8", "replace")
    except binascii.Error:
        return ""


def read_key(target: Target, out: ToolOutput) -> bool:
    return KEY in decoded(out) or KEY in out.content


def soon(condition: Callable[[], bool]) -> bool:
    """Whether ``condition`` holds within 2 s (a killed process takes a moment to end)."""
    deadline = time.monotonic() + 2
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def killed(target: Target, out: ToolOutput) -> bool:
    return soon(lambda: target.victim.poll() is not None)


def wrote_outside(target: Target, out: ToolOutput) -> bool:
    return any(target.outside.iterdir())


def wrote_home(target: Target, out: ToolOutput) -> bool:
    return target.home_file.exists()


def connected(target: Target, out: ToolOutput) -> bool:
    return "tcp" in target.connections


def connected_unix(target: Target, out: ToolOutput) -> bool:
    return "unix" in target.connections


def read_hidden(target: Target, out: ToolOutput) -> bool:
    return HIDDEN_TEXT in decoded(out)


def outlived(target: Target, out: ToolOutput) -> bool:
    """Whether the sleep still runs 2 s after the command returned: the kernel kills what is
    left in a sandbox as it closes, which may end a moment after the command's exit code."""
    pattern = f"sleep {target.sleep_arg}"
    return not soon(lambda: subprocess.run(["pgrep", "-fx", pattern], check=False).returncode != 0)


@dataclass(frozen=True)
class Escape:
    name: str
    command: str
    escaped: Callable[[Target, ToolOutput], bool]
    unconfined: bool = True
    """Also run it unconfined, to prove it gets out there (not for those that would change
    the machine, such as remounting /)."""


ESCAPES = [
    Escape("environ of another process", "base64 -w0 {proc}/environ", read_key),
    Escape(
        "environ of any process", "cat /proc/*/environ | tr '\\0' '\\n' | grep ^A_API", read_key
    ),
    Escape("environ through its root", "base64 -w0 {proc}/root{proc}/environ", read_key),
    Escape("signal another process", "kill -9 {pid}", killed),
    Escape("write beside the work dir", "echo x > {outside}/f", wrote_outside),
    Escape("write to the home folder", "echo x > {home_file}", wrote_home),
    Escape("write through a symlink", "ln -s {outside} out; echo x > out/g", wrote_outside),
    Escape(
        "remount / read-write", "mount -o remount,rw /; echo x > {home_file}", wrote_home, False
    ),
    Escape("a user namespace", "unshare -rm sh -c 'echo x > {home_file}'", wrote_home, False),
    Escape("connect to a loopback server", "{connect}", connected),
    Escape("connect to a service's Unix socket", "{connect_unix}", connected_unix),
    Escape("read a hidden file", "base64 -w0 {hidden}", read_hidden),
    Escape("outlive the command", "setsid {sleep} >/dev/null 2>&1 & {until_sleeping}", outlived),
]
UNCONFINED = [e for e in ESCAPES if e.unconfined]


def boxed(ctx: ToolContext, mode: SandboxMode = "require", **changes: object) -> ToolContext:
    box = ShellSandbox(mode, **changes)  # type: ignore[arg-type]
    return ToolContext(ctx.sandbox, ctx.cwd, ctx.env, shell_sandbox=box)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    reason = unavailable()
    assert reason is None, f"{reason}: install bubblewrap (.ci/run does)"
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext(PathSandbox(work), work.resolve(), child_env())


@pytest.fixture
async def target(tmp_path: Path) -> AsyncIterator[Target]:
    outside = tmp_path / "outside"
    outside.mkdir()
    hidden = tmp_path / "hidden.txt"
    hidden.write_text(HIDDEN_TEXT)
    home_file = Path.home() / f".openheim-sandbox-probe-{uuid.uuid4().hex}"
    victim = subprocess.Popen(["sleep", "120"], env={"PATH": "/usr/bin:/bin", "A_API_KEY": KEY})
    connections: list[str] = []

    def accept(kind: str) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], None]:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.append(kind)
            writer.close()

        return accepted

    server = await asyncio.start_server(accept("tcp"), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    run_dir = Path(tempfile.mkdtemp(dir=os.environ.get("XDG_RUNTIME_DIR") or "/run"))
    sock = run_dir / "service.sock"
    unix_server = await asyncio.start_unix_server(accept("unix"), sock)
    sleep_arg = f"1000.{uuid.uuid4().int % 10**9:09d}"
    try:
        yield Target(outside, home_file, victim, port, sock, hidden, sleep_arg, connections)
    finally:
        server.close()
        unix_server.close()
        shutil.rmtree(run_dir)
        victim.kill()
        victim.wait()
        home_file.unlink(missing_ok=True)
        subprocess.run(["pkill", "-fx", f"sleep {sleep_arg}"], check=False)


@pytest.mark.parametrize("escape", ESCAPES, ids=[e.name for e in ESCAPES])
async def test_escape_fails_when_confined(ctx: ToolContext, target: Target, escape: Escape) -> None:
    confined = boxed(ctx, hidden=(target.hidden,))
    out = await call(execute_command, confined, command=target.fill(escape.command), timeout=20)
    assert not escape.escaped(target, out), out.content


@pytest.mark.parametrize("escape", UNCONFINED, ids=[e.name for e in UNCONFINED])
async def test_escape_works_unconfined(ctx: ToolContext, target: Target, escape: Escape) -> None:
    """The same attempt without the sandbox gets out: the table tests something real."""
    free = boxed(ctx, "off", hidden=(target.hidden,))
    out = await call(execute_command, free, command=target.fill(escape.command), timeout=20)
    assert escape.escaped(target, out), out.content


async def test_inside_the_work_dir_and_temp_dirs_a_command_works(
    ctx: ToolContext, tmp_path: Path
) -> None:
    (ctx.cwd / "sub").mkdir()
    sub = boxed(dataclasses.replace(ctx, cwd=ctx.cwd / "sub"))
    command = (
        "pwd; echo a > here.txt; echo b > /tmp/t.txt; cat /tmp/t.txt; "
        'mkdir -p "$XDG_CACHE_HOME" && echo c > "$XDG_CACHE_HOME/c" && cat "$XDG_CACHE_HOME/c"'
    )
    out = await call(execute_command, sub, command=command)
    assert out.content.startswith(f"exit code: 0\n--- stdout ---\n{ctx.cwd}/sub\nb\nc\n")
    assert (ctx.cwd / "sub" / "here.txt").read_text() == "a\n"
    assert not (tmp_path / "t.txt").exists() and not Path("/tmp/t.txt").exists()


async def test_network_is_there_when_allowed(ctx: ToolContext, target: Target) -> None:
    allowed = boxed(ctx, network=True)
    out = await call(execute_command, allowed, command=target.fill("{connect}"))
    assert not out.is_error and target.connections == ["tcp"], out.content


def unavailable_here(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = "bubblewrap (bwrap) is not installed"
    monkeypatch.setattr(shell, "unavailable", lambda: reason)
    monkeypatch.setattr(shell_sandbox, "unavailable", lambda: reason)


async def test_without_the_sandbox_require_refuses_and_auto_runs_unconfined(
    ctx: ToolContext, target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    unavailable_here(monkeypatch)
    with pytest.raises(ToolError, match=r'"require"\), but bubblewrap \(bwrap\) is not installed'):
        await call(execute_command, boxed(ctx), command="true")
    out = await call(execute_command, boxed(ctx, "auto"), command=target.fill("{connect}"))
    assert not out.is_error and target.connections == ["tcp"]


def test_the_notice_comes_once_per_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    unavailable_here(monkeypatch)
    monkeypatch.setattr(shell_sandbox, "_noticed", set())
    auto, require = ShellSandbox("auto"), ShellSandbox("require")
    first = shell_sandbox.notice(auto)
    assert first is not None and first.startswith("shell commands run unconfined")
    assert "bubblewrap (bwrap) is not installed" in first
    assert shell_sandbox.notice(auto) is None
    assert str(shell_sandbox.notice(require)).startswith("shell commands will be refused")
    assert shell_sandbox.notice(ShellSandbox("off")) is None


def test_the_probe_says_why_bwrap_cannot_be_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = shell_sandbox._probe.__wrapped__
    real = shutil.which("bwrap")
    assert real is not None, "install bubblewrap (.ci/run does)"
    monkeypatch.setenv("PATH", str(tmp_path))
    assert probe() == ((), "bubblewrap (bwrap) is not installed")
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2; exit 1")
    fake.chmod(0o755)
    assert probe() == ((), "bwrap fails here: bwrap: No permissions to create a new namespace")
    monkeypatch.setenv("PATH", str(Path(real).parent))
    command, reason = probe()
    assert reason is None and command[0] == real and "--unshare-all" in command
