"""A private PostgreSQL cluster for one test run: ``initdb`` and ``pg_ctl`` in a temporary folder,
listening only on a Unix socket in that folder (no TCP port, so parallel runs never collide).

PostgreSQL refuses to run as root. When the tests run as root (containers, CI), the cluster runs
as the system user ``postgres`` that Debian's ``postgresql`` package creates, started through
``runuser``; its folder is handed to that user. Otherwise it runs as the current user. Clients
connect as the cluster's superuser ``openheim`` with ``trust`` authentication, which only the
socket's folder permissions (0700) guard: fine for a throwaway test cluster, never for a real one.

The binaries come from ``$OPENHEIM_PG_BINDIR``, else ``initdb`` on PATH, else the newest
``/usr/lib/postgresql/NN/bin`` (where Debian puts them, off PATH); ``scripts/system-deps``
installs the package when none is found.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

SUPERUSER = "openheim"
DEBIAN_ROOT = Path("/usr/lib/postgresql")
START_TIMEOUT = 60
"""Seconds ``pg_ctl start -w`` waits for the server to accept connections."""


def bindir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``; a clear error when PostgreSQL is missing."""
    given = os.environ.get("OPENHEIM_PG_BINDIR")
    if given:
        return Path(given)
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent  # a link on PATH to Debian's folder
    versions = sorted(
        (p for p in DEBIAN_ROOT.glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise RuntimeError(
            "PostgreSQL is not installed (no initdb on PATH nor in /usr/lib/postgresql/*/bin):"
            " run scripts/system-deps, or set OPENHEIM_PG_BINDIR"
        )
    return versions[-1]


class Cluster:
    """A running private cluster; ``database()`` makes a fresh database and returns its URL."""

    def __init__(self, settings: Sequence[str] = ()) -> None:
        """Start the cluster; ``settings`` are more ``name=value`` server settings (a bench's)."""
        self.bin = bindir()
        self._settings = "".join(f" -c {setting}" for setting in settings)
        self.folder = Path(tempfile.mkdtemp(prefix="openheim-pg-"))
        self.data = self.folder / "data"
        self._owner = _service_user()
        self._names = itertools.count(1)
        try:
            self._start()
        except BaseException:
            self.stop()  # a server started before the failure must not outlive the run
            raise

    def _start(self) -> None:
        if self._owner is not None:
            os.chown(self.folder, self._owner.pw_uid, self._owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8")
        self._serve()

    def _serve(self) -> None:
        """Start the server on the cluster's data (``fsync`` off: the machine never crashes in
        a test, while commits still reach the operating system, so a killed server keeps
        them, as one on a real disk would)."""
        settings = (
            "-c listen_addresses='' -c max_connections=300 -c fsync=off"
            f" -c full_page_writes=off -k {self.folder}{self._settings}"
        )
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", settings, "-w", "-t",
                  str(START_TIMEOUT), "start")  # fmt: skip
        with psycopg.connect(self.url(), connect_timeout=START_TIMEOUT) as conn:
            conn.execute("SELECT 1")  # pg_ctl -w waited for it to accept; this proves it

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The server stopped at once (every connection cut) for the body, then started."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        try:
            yield
        finally:
            self._serve()

    def url(self, database: str = "postgres") -> str:
        """A URL for ``database`` over the cluster's socket."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.folder}"

    def database(self) -> str:
        """A new empty database; its URL."""
        name = f"test_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} STRATEGY = FILE_COPY")
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of ``url``, ending its sessions."""
        name = conninfo_to_dict(url)["dbname"]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def restart(self) -> None:
        """Stop the server at once (every connection cut) and start it again."""
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-m", "immediate", "-w", "-t",
                  str(START_TIMEOUT), "restart")  # fmt: skip

    def stop(self) -> None:
        """Stop the server at once (if it runs) and delete its folder."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command: Sequence[str] = [str(self.bin / program), *args]
        if self._owner is not None:
            command = ["runuser", "-u", self._owner.pw_name, "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=START_TIMEOUT + 30, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip()}")


def _service_user() -> pwd.struct_passwd | None:
    """``postgres`` when running as root (PostgreSQL will not run as root), else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError as err:
        raise RuntimeError(
            "running as root needs the 'postgres' system user to run the test cluster:"
            " install Debian's postgresql package (scripts/system-deps)"
        ) from err
