"""The OS sandbox for shell commands: bubblewrap (``bwrap``), where the kernel allows it.

A confined command sees the whole filesystem read-only, except:

* the work dir, which it may change;
* ``/tmp``, ``/var/tmp`` and ``$TMPDIR``: fresh, empty and private to the command;
* ``/dev``: a minimal one (``null``, ``zero``, ``random``, ``tty``, ``shm``, ...);
* ``/proc``: a fresh one for a new PID namespace, so no other process (openheim among them) is
  visible, nor its command line or environment;
* ``/run``: empty, so the sockets of system services (Docker, D-Bus, ssh and gpg agents) are
  out of reach (a Unix socket elsewhere on the filesystem is not);
* ``hidden`` paths (deny-read patterns naming a fixed file or folder, such as ``~/.ssh`` and
  openheim's own ``config.toml``): an empty folder or an unreadable file.

``XDG_CACHE_HOME`` points into the private ``/tmp``, so tools that keep a cache there work.

It runs in new user, PID, IPC, UTS, cgroup and network namespaces with no capabilities and no
way to create further user namespaces. The new network namespace holds only its own loopback,
so no connection leaves it; ``network=True`` (config ``shell_network = true``) keeps the host's
network instead. When the command's shell ends, the namespace's first process ends and the
kernel kills everything left in it: nothing a command starts outlives it.

The command is started, as unconfined ones are, in a new session without a controlling
terminal and with stdin on ``/dev/null`` (so no ``--new-session`` is needed against terminal
input injection); its process group holds ``bwrap`` and the namespace's first process, so
killing the group on a timeout or a cancel ends the whole sandbox.

Whether ``bwrap`` works here is probed once per process (``unavailable``); where it does not
(not installed, user namespaces disabled, a container's seccomp filter), ``mode="auto"`` runs
commands unconfined and the session says so once (``notice``); ``mode="require"`` refuses them.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from openheim.process import spawn

SandboxMode = Literal["auto", "require", "off"]
SHELL = "/bin/sh"
TEMP_DIRS = ("/tmp", "/var/tmp")
RUN_DIR = Path("/run")
RESOLVER_DIR = RUN_DIR / "systemd" / "resolve"

_BASE = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--unshare-all",
    "--unshare-user",
    "--cap-drop", "ALL",
    "--die-with-parent",
)  # fmt: skip
_NO_NESTING = ("--disable-userns",)
"""Not in bubblewrap before 0.8: used when this one accepts it."""


@dataclass(frozen=True, slots=True)
class ShellSandbox:
    """How shell commands are confined: config keys ``shell_sandbox`` and ``shell_network``."""

    mode: SandboxMode = "auto"
    """``auto``: confine where possible, else run unconfined (with a notice); ``require``:
    refuse to run commands unconfined; ``off``: never confine."""
    network: bool = False
    """Let confined commands use the host's network."""
    hidden: tuple[Path, ...] = ()
    """Files and folders confined commands cannot read (absolute)."""


@functools.cache
def _probe() -> tuple[tuple[str, ...], str | None]:
    """The ``bwrap`` command with the flags this one takes, and None; or ``()`` and why it
    cannot be used."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return (), "bubblewrap (bwrap) is not installed"
    error = "bwrap did not start"
    for extra in (_NO_NESTING, ()):
        try:
            done = spawn.run_briefly([bwrap, *_BASE, *extra, "--", "/bin/true"], timeout=10)
        except (OSError, subprocess.SubprocessError) as err:
            return (), f"bwrap could not be run: {err}"
        if done.returncode == 0:
            return (bwrap, *_BASE, *extra), None
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        error = f"bwrap fails here: {lines[-1] if lines else f'exit code {done.returncode}'}"
    return (), error


def unavailable() -> str | None:
    """Why commands cannot be confined on this machine, or None when they can (probed once;
    blocking for a few milliseconds, so async callers run it in a thread)."""
    return _probe()[1]


def confine(
    command: str,
    *,
    cwd: Path,
    work_dir: Path,
    sandbox: ShellSandbox,
    env: Mapping[str, str],
) -> list[str]:
    """The argv running ``sh -c command`` in ``cwd`` inside the sandbox (call only when
    ``unavailable()`` is None). ``env`` is the child environment; its ``TMPDIR`` is made private
    too."""
    argv = list(_probe()[0])
    for temp in _temp_dirs(env.get("TMPDIR")):
        argv += ["--tmpfs", temp]
    argv += _run_dir(sandbox.network)
    argv += ["--bind", str(work_dir), str(work_dir)]
    for path in _hidden(sandbox.hidden, work_dir):
        argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    cache = env.get("XDG_CACHE_HOME", "")
    if not Path(cache).is_absolute() or not Path(cache).is_relative_to(work_dir):
        argv += ["--setenv", "XDG_CACHE_HOME", f"{TEMP_DIRS[0]}/.cache"]
    return [*argv, "--chdir", str(cwd), "--", SHELL, "-c", command]


def _run_dir(network: bool) -> list[str]:
    """``/run`` emptied: it holds the sockets of system services (Docker, D-Bus, agents), which a
    read-only mount does not stop a command from connecting to. With the network, the
    resolver's files (``/etc/resolv.conf`` may point there) stay; so does the host network."""
    if not RUN_DIR.is_dir():
        return ["--share-net"] if network else []
    flags = ["--tmpfs", str(RUN_DIR.resolve())]
    if network:
        flags.insert(0, "--share-net")
        if RESOLVER_DIR.is_dir():
            flags += ["--ro-bind", str(RESOLVER_DIR), str(RESOLVER_DIR)]
    return flags


def _temp_dirs(tmpdir: str | None) -> list[str]:
    """The temp dirs made private: the standard ones and ``$TMPDIR``, those that exist."""
    wanted = [Path(p) for p in (*TEMP_DIRS, tmpdir or "")]
    return sorted({str(p.resolve()) for p in wanted if p.is_absolute() and p.is_dir()})


def _hidden(paths: Iterable[Path], work_dir: Path) -> list[Path]:
    """The paths to mask that exist and do not hold the work dir (masking it would hide it)."""
    out = []
    for path in paths:
        real = path.resolve()
        if real.exists() and not work_dir.is_relative_to(real):
            out.append(real)
    return out


_noticed: set[str] = set()


def notice(sandbox: ShellSandbox) -> str | None:
    """A line to show once per process when commands will not be confined as configured."""
    reason = None if sandbox.mode == "off" else unavailable()
    if reason is None or sandbox.mode in _noticed:
        return None
    _noticed.add(sandbox.mode)
    if sandbox.mode == "require":
        return (
            f'shell commands will be refused: shell_sandbox = "require" but {reason} '
            "(install bubblewrap, or see docs/safety.md)"
        )
    return (
        f"shell commands run unconfined, with your permissions: {reason} "
        "(install bubblewrap to confine them to the work dir; see docs/safety.md)"
    )
