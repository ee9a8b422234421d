"""``openheim.process.spawn``: the one place that starts child processes, and what it promises.

The source scan keeps it the one place: a new way of starting a process anywhere else in
``src/`` fails here, so no spawn site can forget that its children must die with openheim.
"""

from __future__ import annotations

import ast
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import openheim
from openheim.process import spawn
from openheim.process.child_env import child_env

SRC = Path(openheim.__file__).parent
ALLOWED = {"process/spawn.py"}
"""Modules (relative to ``src/openheim``) that may start processes themselves."""
STARTERS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "asyncio.subprocess": {"create_subprocess_exec", "create_subprocess_shell"},
    "anyio": {"open_process", "run_process"},
    "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"},
    "pty": {"fork", "spawn"},
    "concurrent.futures": {"ProcessPoolExecutor"},
    "mcp": {"stdio_client"},
    "mcp.client.stdio": {"stdio_client"},
}
"""Functions that start a process, by module; ``os.exec*`` and ``os.spawn*`` count as well."""
STARTING_MODULES = ("multiprocessing", "concurrent.futures.process", "pexpect", "ptyprocess")
"""Modules whose whole purpose is starting processes: importing them at all is a spawn site."""
LOOP_METHODS = {"subprocess_exec", "subprocess_shell"}
"""Event loop methods that start processes (called on a loop object, whatever its name)."""


def _starts(module: str, name: str) -> bool:
    if module == "os" and name.startswith(("exec", "spawn")):
        return True
    return name in STARTERS.get(module, set())


def _annotations(tree: ast.AST) -> set[int]:
    """Ids of every node inside a type annotation (``subprocess.Popen[bytes]`` starts nothing)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
    return {id(sub) for root in roots for sub in ast.walk(root)}


def spawn_sites(source: str) -> list[str]:
    """Every place in ``source`` that starts a process, as ``line: what``."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                aliases[bound] = alias.name if alias.asname else bound
                if alias.name.startswith(STARTING_MODULES):
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(STARTING_MODULES):
                found.append(f"{node.lineno}: from {node.module} import")
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if _starts(node.module, alias.name):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    skip = _annotations(tree)
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.Attribute | ast.Name):
            continue
        if isinstance(node, ast.Attribute) and node.attr in LOOP_METHODS:
            found.append(f"{node.lineno}: .{node.attr}")
            continue
        dotted = _dotted(node, aliases)
        if dotted and "." in dotted:
            module, name = dotted.rsplit(".", 1)
            if _starts(module, name):
                found.append(f"{node.lineno}: {dotted}")
    return found


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``a.b.c`` for an attribute chain on a name, with the name's import resolved."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def test_only_openheim_spawn_starts_processes() -> None:
    offenders = {
        str(path.relative_to(SRC)): sites
        for path in sorted(SRC.rglob("*.py"))
        if str(path.relative_to(SRC)) not in ALLOWED
        and (sites := spawn_sites(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "start child processes through openheim.process.spawn"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\nsubprocess.Popen(['x'])",
        "import subprocess as sp\nsp.run(['x'])",
        "from subprocess import check_output\n",
        "import asyncio\nasync def f():\n    await asyncio.create_subprocess_exec('x')",
        "import asyncio\nasync def f():\n    await asyncio.subprocess.create_subprocess_shell('x')",
        "from asyncio import subprocess as aio\naio.create_subprocess_exec('x')",
        "async def f(loop):\n    await loop.subprocess_exec(lambda: None, 'x')",
        "import anyio\nasync def f():\n    await anyio.open_process(['x'])",
        "import os\nos.execvp('x', ['x'])",
        "import os\nos.posix_spawn('x', ['x'], {})",
        "import os\nstart = os.fork",
        "import multiprocessing\n",
        "from concurrent.futures import ProcessPoolExecutor\n",
        "from mcp.client.stdio import stdio_client\n",
        "import pty\npty.spawn('x')",
    ],
)
def test_the_scan_finds_each_way_to_start_a_process(source: str) -> None:
    assert spawn_sites(source)


def test_the_scan_lets_types_and_constants_through() -> None:
    source = (
        "import asyncio, subprocess\n"
        "def f(p: subprocess.Popen[bytes]) -> asyncio.subprocess.Process:\n"
        "    x: subprocess.Popen[bytes] = p\n"
        "    return subprocess.DEVNULL, subprocess.TimeoutExpired\n"
    )
    assert spawn_sites(source) == []


def state_of(pid: int) -> str | None:
    """A process's state letter (``Z`` for a zombie), or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def test_this_system_gets_the_death_signal_prefix() -> None:
    prefix = spawn.death_signal_prefix()
    assert prefix[1:] == ("--pdeathsig", "KILL", "--") and Path(prefix[0]).name == "setpriv"


def test_a_child_is_killed_when_the_thread_that_started_it_ends(tmp_path: Path) -> None:
    """Why children are started from the event loop's thread, never from a passing worker."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        started.append(
            spawn.popen(
                ["sleep", "600"],
                env=child_env(),
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    def start_and_wait_for_exec() -> None:
        start()
        deadline = time.monotonic() + 30  # setpriv sets the signal, then runs the program
        while not Path(f"/proc/{started[0].pid}/cmdline").read_bytes().startswith(b"sleep"):
            assert time.monotonic() < deadline, "setpriv did not run the program"
            time.sleep(0.005)

    worker = threading.Thread(target=start_and_wait_for_exec)
    worker.start()
    worker.join(30)
    (child,) = started
    try:
        assert child.wait(timeout=30) == -9  # SIGKILL, from the kernel, as the thread ended
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def without_setpriv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(spawn, "SETPRIV_DIRS", (str(tmp_path / "nowhere"),))
    spawn.death_signal_prefix.cache_clear()
    yield
    spawn.death_signal_prefix.cache_clear()


@pytest.mark.usefixtures("without_setpriv")
async def test_without_setpriv_children_start_as_before(tmp_path: Path) -> None:
    assert spawn.death_signal_prefix() == ()
    assert spawn.tied_command(["sh", "-c", "x"], None, None) == ["sh", "-c", "x"]
    proc = await spawn.exec_async(
        ["sh", "-c", "echo started in $PWD"],
        env=child_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    assert out.decode() == f"started in {tmp_path}\n"


def test_a_child_leads_a_session_of_its_own(tmp_path: Path) -> None:
    child = spawn.popen(
        ["sleep", "600"],
        env=child_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert os.getsid(child.pid) == child.pid == os.getpgid(child.pid)
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("with_setpriv", [True, False])
async def test_a_missing_or_unrunnable_program_raises_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_setpriv: bool
) -> None:
    if not with_setpriv:
        monkeypatch.setattr(spawn, "SETPRIV_DIRS", ())
    spawn.death_signal_prefix.cache_clear()
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    try:
        for argv, error in [
            ([f"no-such-program-{os.getpid()}"], FileNotFoundError),
            ([str(tmp_path / "missing")], FileNotFoundError),
            (["./plain.txt"], PermissionError),
        ]:
            with pytest.raises(error):
                await spawn.open_process(argv, env=child_env(), cwd=tmp_path, stderr=None)
    finally:
        spawn.death_signal_prefix.cache_clear()


def test_options_after_the_program_reach_the_program(tmp_path: Path) -> None:
    child = spawn.popen(
        ["sh", "-c", 'echo "$1"', "sh", "--pdeathsig"],
        env=child_env(),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = child.communicate(timeout=30)
    assert (out, err, child.returncode) == (b"--pdeathsig\n", b"", 0)
