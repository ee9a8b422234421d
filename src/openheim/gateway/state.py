"""What the gateway keeps across restarts, in ``data_dir/gateway.db`` (SQLite, WAL; created
private, ``0600``, as are its WAL files, since it holds messages until they are answered):

- ``inbox``: each inbound message by platform and id, stored before the platform is told it
  arrived; a second delivery of the same id is seen as a duplicate, and a message not yet
  answered when the process stopped is handled again at the next start. A message's text is
  dropped once it is handled.
- ``grants``: senders admitted by the passphrase (revocable).
- ``rate``: each sender's count in the current fixed window.
- ``conversations``: the stored session of each conversation (platform, sender, channel), and
  the model chosen there with ``/model``.
- ``cursors``: where a platform's feed was read up to (Telegram's update offset).
- ``leaders``: which gateway process polls each platform, until when (the leader lease).

With a ``store_url`` the same tables live in the PostgreSQL store (``pg_state``), shared by
every replica; this class holds the SQL both backends run.

Every method is synchronous and may wait on its database (a busy SQLite file, an unreachable
PostgreSQL server retried for seconds): the gateway's async code calls them through
``off_loop``, in the state's own worker thread, so the event loop keeps serving meanwhile and a
slow database ties up that one thread, not the threads the rest of the process shares; a lock
makes each statement one at a time on the connection for any other caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from openheim.gateway.inbound import Inbound
from openheim.store.opener import postgres_missing

P = ParamSpec("P")
T = TypeVar("T")

KEEP_HANDLED_SECS = 7 * 86_400.0
"""How long a handled message's id is kept to recognise a late duplicate."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
  platform TEXT NOT NULL, message_id TEXT NOT NULL, record TEXT, handled INTEGER NOT NULL,
  at REAL NOT NULL, PRIMARY KEY (platform, message_id));
CREATE TABLE IF NOT EXISTS grants (
  platform TEXT NOT NULL, sender TEXT NOT NULL, at REAL NOT NULL,
  PRIMARY KEY (platform, sender));
CREATE TABLE IF NOT EXISTS rate (
  platform TEXT NOT NULL, sender TEXT NOT NULL, window REAL NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY (platform, sender));
CREATE TABLE IF NOT EXISTS conversations (
  key TEXT PRIMARY KEY, session_id TEXT, model TEXT);
CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leaders (name TEXT PRIMARY KEY, holder TEXT NOT NULL,
  expires REAL NOT NULL);
"""


@dataclass(frozen=True)
class Conversation:
    """A conversation's stored session (None before its first turn) and chosen model."""

    key: str
    session_id: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Result:
    """What one statement did: the rows it changed and the rows it returned."""

    rowcount: int
    rows: list[tuple[Any, ...]]


class GatewayState:
    """The gateway's database (SQLite in ``path``); every method is one short transaction.

    Subclasses keep the tables elsewhere by overriding ``_exec``, ``_now`` and ``close``;
    table names are written ``{p}name`` in the SQL (``prefix`` is prepended).
    """

    prefix = ""
    order = "rowid"
    """The column that keeps the inbox in arrival order among messages of the same time."""
    _worker: ThreadPoolExecutor | None = None
    """The one thread ``off_loop`` runs calls in, started by the first."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # private: it holds messages until answered
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        self._forget_old()

    def _exec(self, sql: str, parameters: tuple[Any, ...] = ()) -> Result:
        with self._lock:  # called from worker threads: one statement at a time
            cursor = self._db.execute(sql.format(p=self.prefix), parameters)
            rows = cursor.fetchall()
            return Result(cursor.rowcount, [tuple(row) for row in rows])

    def _now(self) -> float:
        """The clock leases are timed by (the database's own where replicas share one)."""
        return time.time()

    def _forget_old(self) -> None:
        self._exec(
            "DELETE FROM {p}inbox WHERE handled = 1 AND at < ?", (time.time() - KEEP_HANDLED_SECS,)
        )

    async def off_loop(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``call(*args, **kwargs)`` (a method of this state) in the state's worker thread, in
        the order asked; the event loop serves on while it waits on the database."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="gateway-state")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(call, *args, **kwargs))

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=False, cancel_futures=True)  # none runs once closed

    def close(self) -> None:
        self._stop_worker()
        with self._lock:
            self._db.close()

    # inbox

    def receive(self, message: Inbound) -> bool:
        """Store ``message``; False when its id was seen before (a duplicate delivery)."""
        done = self._exec(
            "INSERT INTO {p}inbox (platform, message_id, record, handled, at)"
            " VALUES (?, ?, ?, 0, ?) ON CONFLICT (platform, message_id) DO NOTHING",
            (message.platform, message.message_id, message.to_json(), time.time()),
        )
        return done.rowcount == 1

    def handled(self, message: Inbound) -> None:
        """``message`` was answered (or refused): keep its id, drop its text."""
        self._exec(
            "UPDATE {p}inbox SET handled = 1, record = NULL WHERE platform = ? AND message_id = ?",
            (message.platform, message.message_id),
        )

    def unhandled(self, platform: str) -> list[Inbound]:
        """``platform``'s stored messages not yet answered, oldest first."""
        done = self._exec(
            "SELECT record FROM {p}inbox WHERE platform = ? AND handled = 0"
            f" ORDER BY at, {self.order}",
            (platform,),
        )
        return [Inbound.from_json(row[0]) for row in done.rows]

    # grants

    def grant(self, platform: str, sender: str) -> None:
        self._exec(
            "INSERT INTO {p}grants (platform, sender, at) VALUES (?, ?, ?)"
            " ON CONFLICT (platform, sender) DO UPDATE SET at = excluded.at",
            (platform, sender, time.time()),
        )

    def granted(self, platform: str, sender: str) -> bool:
        done = self._exec(
            "SELECT 1 FROM {p}grants WHERE platform = ? AND sender = ?", (platform, sender)
        )
        return bool(done.rows)

    def revoke(self, platform: str, sender: str) -> bool:
        """Take a sender's grant back; False when there was none."""
        done = self._exec(
            "DELETE FROM {p}grants WHERE platform = ? AND sender = ?", (platform, sender)
        )
        return done.rowcount == 1

    def grants(self) -> list[tuple[str, str, float]]:
        """Every grant: platform, sender and when it was given."""
        done = self._exec("SELECT platform, sender, at FROM {p}grants ORDER BY platform, at")
        return [(str(p), str(s), float(a)) for p, s, a in done.rows]

    # rate

    def count(self, platform: str, sender: str, window: float) -> int:
        """Count one message of ``sender`` in the window starting at ``window``; the count."""
        done = self._exec(
            'INSERT INTO {p}rate (platform, sender, "window", count) VALUES (?, ?, ?, 1)'
            " ON CONFLICT (platform, sender) DO UPDATE SET count = CASE"
            ' WHEN {p}rate."window" = excluded."window" THEN {p}rate.count + 1 ELSE 1 END,'
            ' "window" = excluded."window" RETURNING count',
            (platform, sender, window),
        )
        return int(done.rows[0][0])

    # conversations

    def conversation(self, key: str) -> Conversation:
        done = self._exec("SELECT session_id, model FROM {p}conversations WHERE key = ?", (key,))
        return Conversation(key, *done.rows[0]) if done.rows else Conversation(key)

    def save(self, conversation: Conversation) -> None:
        self._exec(
            "INSERT INTO {p}conversations (key, session_id, model) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET"
            " session_id = excluded.session_id, model = excluded.model",
            (conversation.key, conversation.session_id, conversation.model),
        )

    # cursors

    def cursor(self, name: str) -> str | None:
        done = self._exec("SELECT value FROM {p}cursors WHERE name = ?", (name,))
        return str(done.rows[0][0]) if done.rows else None

    def set_cursor(self, name: str, value: str) -> None:
        self._exec(
            "INSERT INTO {p}cursors (name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    # leaders

    def lead(self, name: str, holder: str, ttl: float) -> bool:
        """Take or renew ``holder``'s lease on ``name`` for ``ttl`` seconds; False while another
        holder's lease has not expired."""
        now = self._now()
        done = self._exec(
            "INSERT INTO {p}leaders (name, holder, expires) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " expires = excluded.expires"
            " WHERE {p}leaders.holder = excluded.holder OR {p}leaders.expires < ?",
            (name, holder, now + ttl, now),
        )
        return done.rowcount == 1

    def leader(self, name: str) -> str | None:
        """Who holds (or last held) the lease on ``name``."""
        done = self._exec("SELECT holder FROM {p}leaders WHERE name = ?", (name,))
        return str(done.rows[0][0]) if done.rows else None

    def take_over(self, name: str, old: str, new: str, ttl: float) -> bool:
        """Give ``old``'s lease on ``name`` to ``new`` (``old`` is known gone); False when it
        changed hands meanwhile."""
        done = self._exec(
            "UPDATE {p}leaders SET holder = ?, expires = ? WHERE name = ? AND holder = ?",
            (new, self._now() + ttl, name, old),
        )
        return done.rowcount == 1

    def resign(self, name: str, holder: str) -> None:
        """Give ``holder``'s lease on ``name`` up, so another process takes over at once."""
        self._exec("DELETE FROM {p}leaders WHERE name = ? AND holder = ?", (name, holder))


def open_state(data_dir: Path, url: str | None = None) -> GatewayState:
    """The gateway's state in the PostgreSQL store at ``url`` when one is given (shared by
    replicas), else in ``data_dir/gateway.db``."""
    if not url:
        return GatewayState(data_dir / "gateway.db")
    try:
        from openheim.gateway.pg_state import PgGatewayState
    except ImportError as err:
        raise postgres_missing(err) from None
    return PgGatewayState(url)
