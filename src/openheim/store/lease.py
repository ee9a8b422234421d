"""Prompt leases in the store (either backend): who holds a session, and when a holder is gone.

A lease row names its holder: a random token (one per ``acquire``), the pid, the host, and the
process's start identity (boot id and start tick on Linux), so a pid reused after a crash or a
reboot is not mistaken for the holder. A lease is stale, and taken over, when its holder is on
this host and that process is gone, or when it is on another host and has not been refreshed
within the heartbeat timeout (pids mean nothing across hosts or containers).

The functions here run inside the caller's transaction.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from openheim.errors import SessionBusy, SessionNotFound
from openheim.store.tables import Connection

log = logging.getLogger(__name__)

HEARTBEAT_TIMEOUT = 300.0
"""Seconds without a refresh after which another host may take a lease over."""


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int
    host: str
    started: str | None
    heartbeat_at: float


def this_host() -> str:
    return socket.gethostname() or "localhost"


def process_started(pid: int) -> str | None:
    """An identity of the process ``pid`` that a reused pid does not share (Linux only).

    The boot id plus the process's start time in clock ticks since boot; None where ``/proc``
    is missing or the process is gone.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return f"{_boot_id()}:{fields[19]}" if len(fields) > 19 else None


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (a zombie counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(holder: Holder, *, now: float, timeout: float) -> bool:
    """Whether ``holder`` is gone: a dead or reused pid here, or a missed heartbeat elsewhere."""
    if holder.host != this_host():
        return now - holder.heartbeat_at > timeout
    if not pid_alive(holder.pid):
        return True
    started = process_started(holder.pid)
    return holder.started is not None and started is not None and started != holder.started


def take(conn: Connection, session_id: str, *, timeout: float) -> str:
    """Claim the session's lease for a new token, or raise ``SessionBusy`` naming the holder."""
    # both queries asked before either answer is read: one round trip on PostgreSQL
    found = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))
    holder = current(conn, session_id)
    if found.fetchone() is None:
        raise SessionNotFound(session_id)
    now = time.time()
    if holder is not None and not is_stale(holder, now=now, timeout=timeout):
        raise SessionBusy(session_id, pid=holder.pid, host=holder.host)
    if holder is not None:
        log.warning(
            "taking over the stale lease of session %s from process %d on %s",
            session_id,
            holder.pid,
            holder.host,
        )
    token = uuid.uuid4().hex
    _write(conn, session_id, token, now)
    return token


def renew(conn: Connection, session_id: str, token: str) -> None:
    """Move our heartbeat to now, reclaiming the lease if its row vanished.

    Raises ``SessionBusy`` when another holder took it over, ``SessionNotFound`` when the
    session was deleted.
    """
    now = time.time()
    done = conn.execute(
        "UPDATE leases SET heartbeat_at = ? WHERE session_id = ? AND token = ?",
        (now, session_id, token),
    )
    if done.rowcount:
        return
    holder = current(conn, session_id)
    if holder is not None:
        raise SessionBusy(session_id, pid=holder.pid, host=holder.host)
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise SessionNotFound(session_id)
    _write(conn, session_id, token, now)


def _write(conn: Connection, session_id: str, token: str, now: float) -> None:
    pid = os.getpid()
    conn.execute(
        "INSERT INTO leases (session_id, token, pid, host, started, acquired_at, heartbeat_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
        " token = excluded.token, pid = excluded.pid, host = excluded.host,"
        " started = excluded.started, acquired_at = excluded.acquired_at,"
        " heartbeat_at = excluded.heartbeat_at",
        (session_id, token, pid, this_host(), process_started(pid), now, now),
    )


def drop(conn: Connection, session_id: str, token: str) -> None:
    """Delete our lease row; a lease taken over by someone else is left to them."""
    conn.execute("DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, token))


def current(conn: Connection, session_id: str) -> Holder | None:
    row = conn.execute(
        "SELECT pid, host, started, heartbeat_at FROM leases WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else Holder(int(row[0]), str(row[1]), row[2], float(row[3]))


def foreign_holder(conn: Connection, session_id: str, *, timeout: float) -> Holder | None:
    """The live holder of the session's lease when it is another process (maybe mid-tool)."""
    holder = current(conn, session_id)
    if holder is None or is_stale(holder, now=time.time(), timeout=timeout):
        return None
    if holder.pid == os.getpid() and holder.host == this_host():
        return None
    return holder
