"""Starting child processes: the one module that does it, so that every child dies with openheim.

Every child started here (shell commands, MCP stdio servers, managed llama.cpp servers):

* leads a new session, so it has a process group of its own: Ctrl-C at openheim's terminal does
  not reach it, and ``os.killpg(child.pid, ...)`` stops it with everything it started;
* on Linux, gets SIGKILL from the kernel when the thread that started it ends, which includes
  openheim being killed with SIGKILL (``PR_SET_PDEATHSIG``). The setting is made by util-linux's
  ``setpriv --pdeathsig KILL --`` put in front of the command, not from Python between fork and
  exec (``preexec_fn`` can deadlock once the process has threads). Where no setpriv with that
  option is found (macOS, minimal images), children start without it: they are still stopped on
  every ordinary exit, just not after a SIGKILL of openheim.

What the death signal does not cover: it reaches the direct child only (the kernel clears it in
the child's own children, and when a set-user-id program is run). The rest of a shell
pipeline, or an MCP server started through a launcher such as ``npx``, is killed with the process
group on every ordinary stop (cancel, timeout, session close, Ctrl-C, SIGTERM); after a SIGKILL
of openheim it lives on unless it exits when its input or output pipe closes, as MCP servers
do. The signal follows the *thread* that started the child, so children are started from the
event loop's thread (every caller here does), never from a short-lived worker thread. And it is
armed by setpriv a moment after the child starts: a child started in the last millisecond before
openheim is killed can miss it.

A program that cannot be found or is not executable raises ``FileNotFoundError`` or
``PermissionError`` before anything starts, as ``subprocess`` does without the prefix (setpriv
would report it only as an exit status).

For children that must not outlive their task (shell commands, hooks), ``supervise`` waits for
one whose output goes to pipes read here (``read_pipe``): its whole process group is killed
(``kill_group``) at the time limit, on a cancel, and when something the child left behind still
holds the output a short grace after the child itself exited. The kill is SIGKILL at once, not
SIGTERM first: these children are the model's or a project's commands, which may ignore or trap
SIGTERM, and a grace for them to clean up would be a delay every timeout and cancel pays.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anyio.abc import Process as AnyioProcess

Stream = int | IO[Any] | None
"""Where a child's stdin, stdout or stderr goes: a file descriptor, a file, ``subprocess.PIPE``,
``subprocess.DEVNULL`` or None (inherited)."""
SETPRIV_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
"""Where setpriv is looked for: system folders only, never the user's or a project's PATH."""
PROBE_TIMEOUT = 5.0


@functools.cache
def death_signal_prefix() -> tuple[str, ...]:
    """``setpriv --pdeathsig KILL --`` when this system's setpriv supports it, else ``()``.

    Checked once per process by running the prefix on setpriv itself."""
    if not sys.platform.startswith("linux"):
        return ()
    setpriv = shutil.which("setpriv", path=os.pathsep.join(SETPRIV_DIRS))
    if setpriv is None:
        return ()
    prefix = (setpriv, "--pdeathsig", "KILL", "--")
    try:
        probe = subprocess.run(
            [*prefix, setpriv, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.pathsep.join(SETPRIV_DIRS)},
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if probe.returncode == 0 else ()


def tied_command(
    argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None
) -> list[str]:
    """``argv`` behind the death-signal prefix, once its program is known to be runnable."""
    if not argv:
        raise ValueError("a child process needs a command")
    prefix = death_signal_prefix()
    if prefix:
        _check_runnable(argv[0], env, cwd)
    return [*prefix, *argv]


def _check_runnable(
    program: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None
) -> None:
    """Raise as exec would for a program that is missing or not executable: a path is taken
    relative to the child's cwd, a bare name is looked up in the child's PATH."""
    if os.sep in program:
        path = Path(cwd or ".") / program
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    search = os.pathsep.join(os.get_exec_path(dict(env) if env is not None else None))
    if shutil.which(program, path=search) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def popen(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
    stdin: Stream,
    stdout: Stream,
    stderr: Stream,
) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` of ``argv`` in a new session, tied to this thread's life."""
    return subprocess.Popen(
        tied_command(argv, env, cwd),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )


async def exec_async(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
    stdin: Stream,
    stdout: Stream,
    stderr: Stream,
) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec`` of ``argv`` in a new session, tied to the loop's
    thread."""
    return await asyncio.create_subprocess_exec(
        *tied_command(argv, env, cwd),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )


async def open_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | os.PathLike[str] | None,
    stderr: Stream,
) -> AnyioProcess:
    """``anyio.open_process`` of ``argv`` (stdin and stdout piped) in a new session, tied to the
    loop's thread."""
    import anyio

    return await anyio.open_process(
        tied_command(argv, env, cwd), env=dict(env), cwd=cwd, stderr=stderr, start_new_session=True
    )


def run_briefly(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Run a short check (``argv`` with no input, output captured) and wait for it; killed with
    its process group after ``timeout`` seconds (``subprocess.TimeoutExpired``)."""
    env = dict(os.environ)
    proc = popen(
        argv,
        env=env,
        cwd=None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group ``pgid`` (a child started here leads its own group,
    whose id is its pid; the group outlives its reaped leader while a member lives)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def read_pipe(
    protocol: asyncio.Protocol, readers: contextlib.ExitStack, writers: contextlib.ExitStack
) -> int:
    """A pipe whose read end feeds ``protocol`` (its transport closed by ``readers``); the write
    end, for the child (closed by ``writers`` once the child has it)."""
    read_fd, write_fd = os.pipe()
    writers.callback(os.close, write_fd)
    reader = os.fdopen(read_fd, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: protocol, reader)
    except BaseException:
        reader.close()
        raise
    readers.callback(transport.close)
    return write_fd


async def supervise(
    proc: asyncio.subprocess.Process,
    closed: Sequence[asyncio.Future[None]],
    time_limit: float,
    grace: float,
) -> tuple[int, bool, bool]:
    """Wait for ``proc`` (started here, its output on pipes from ``read_pipe``, done when the
    futures ``closed`` are); its exit code, whether it ran past ``time_limit`` seconds, and
    whether what it left running still held the output ``grace`` seconds after it exited.
    Its process group is killed in those two cases and on a cancel (a background process that
    let go of the output is left alone: the caller decides). Returns at most ``2 * grace``
    seconds after the child's end even when a process that left the group holds the output."""
    try:
        try:
            code = await asyncio.wait_for(proc.wait(), time_limit)
            timed_out = False
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            code = await proc.wait()
        lingered = not await _drained(closed, grace)
        if lingered:
            kill_group(proc.pid)
            await _drained(closed, grace)
    except BaseException:
        kill_group(proc.pid)
        await proc.wait()
        raise
    return code, timed_out, lingered


async def _drained(closed: Sequence[asyncio.Future[None]], grace: float) -> bool:
    """Whether every pipe in ``closed`` reached end of file within ``grace`` seconds."""
    _, pending = await asyncio.wait(closed, timeout=grace)
    return not pending
