"""A managed child server: its own process group, a log file, and a guaranteed end.

``ServerProcess`` starts a command through ``openheim.process.spawn``: in a new session (so signals
meant for openheim's terminal, Ctrl-C included, do not reach it, and it can be killed with
everything it started) and, on Linux, bound to die with openheim even when openheim is
SIGKILLed. It writes its stdout and stderr to a log file, and reads the last lines back for
error messages. It is stopped by ``stop()``, and otherwise by a ``weakref.finalize`` hook that
runs when the object is collected or the interpreter exits: SIGTERM to the group, a short wait,
then SIGKILL, and the leader is always reaped so no zombie remains.

The port helpers answer "is this loopback port free" and "which port can a server take"; they are
here because every managed server needs them and they have nothing to do with a wire format.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from openheim.errors import ConfigError
from openheim.process import spawn

STOP_GRACE = 3.0
"""Seconds a server gets to exit after SIGTERM before its group is SIGKILLed."""
MAX_LOG_BYTES = 8 * 2**20
"""A log bigger than this is rotated to ``*.1`` when a server starts."""
TAIL_BYTES = 64 * 1024
NEXT_FREE_SCAN = 100
"""How many ports after a taken one ``next_free_port`` tries."""


class ServerProcess:
    """One running child server; see the module docstring for the guarantees."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, cwd: Path
    ) -> None:
        self.argv = tuple(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        _rotate(log_path)
        with open(log_path, "ab") as log:
            log.write(f"--- openheim starts: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._log_start = log.tell()
            try:
                self._popen = spawn.popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=cwd,
                )
            except OSError as exc:
                raise ConfigError(
                    f"cannot run the server command {self.argv[0]!r}: {exc}",
                    hint="install it, or set server_command to a program that exists",
                ) from exc
        self.pid = self._popen.pid
        self._finalizer = weakref.finalize(self, _reap_group_blocking, self._popen, STOP_GRACE)

    def exit_code(self) -> int | None:
        """The exit status once the process has ended (reaping it), else None."""
        return self._popen.poll()

    def log_tail(self, lines: int = 8, width: int = 240) -> list[str]:
        """The last lines this process wrote to its log, each cut to ``width``; blank lines and
        traceback underlines (``^^^``) are left out."""
        try:
            with open(self.log_path, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(self._log_start, size - TAIL_BYTES))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return []
        found = [line.strip() for line in text.splitlines() if line.strip(" ^~\t")]
        return [line[:width] for line in found[-lines:]]

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM the group, wait up to ``grace`` seconds, then SIGKILL it; reap the leader."""
        if not self._finalizer.alive:
            return
        try:
            _signal_group(self.pid, signal.SIGTERM)
            if not await _exited(self._popen, grace):
                _signal_group(self.pid, signal.SIGKILL)
                await _exited(self._popen, grace)
            _signal_group(self.pid, signal.SIGKILL)  # stragglers outlive their reaped leader
            if self._popen.poll() is None:  # stuck in the kernel: wait in a thread, never leak
                await asyncio.to_thread(self._popen.wait)
        except BaseException:
            _signal_group(self.pid, signal.SIGKILL)  # cancelled: the finalizer will reap it
            raise
        self._finalizer.detach()


async def _exited(popen: subprocess.Popen[bytes], within: float) -> bool:
    """Poll (and so reap) the process until it ends or ``within`` seconds pass."""
    deadline = time.monotonic() + within
    delay = 0.005
    while popen.poll() is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def _reap_group_blocking(popen: subprocess.Popen[bytes], grace: float) -> None:
    """The finalizer: the same as ``stop`` but blocking (it runs at exit, with no loop)."""
    _signal_group(popen.pid, signal.SIGTERM)
    try:
        popen.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(popen.pid, signal.SIGKILL)
        popen.wait()
    _signal_group(popen.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _rotate(path: Path) -> None:
    """Keep one old generation of a log that has grown past ``MAX_LOG_BYTES``."""
    with contextlib.suppress(OSError):
        if path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_name(path.name + ".1"))


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (a listener there makes it taken)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_port(host: str) -> int:
    """A port the kernel considers free on ``host`` right now."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


def next_free_port(host: str, taken: int) -> int:
    """The first free port after ``taken``; ConfigError when the next ``NEXT_FREE_SCAN`` are all
    taken."""
    for port in range(taken + 1, min(taken + 1 + NEXT_FREE_SCAN, 65536)):
        if port_is_free(host, port):
            return port
    raise ConfigError(
        f"ports {taken} to {taken + NEXT_FREE_SCAN} on {host} are all in use",
        hint="set port to a free port, or leave it unset to let openheim pick one",
    )
