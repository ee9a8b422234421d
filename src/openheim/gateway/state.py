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
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from openheim.gateway.inbound import Inbound

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
"""


@dataclass(frozen=True)
class Conversation:
    """A conversation's stored session (None before its first turn) and chosen model."""

    key: str
    session_id: str | None = None
    model: str | None = None


class GatewayState:
    """The gateway's database; every method is one short transaction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # private: it holds messages until answered
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        self._db.execute(
            "DELETE FROM inbox WHERE handled = 1 AND at < ?", (time.time() - KEEP_HANDLED_SECS,)
        )

    def close(self) -> None:
        self._db.close()

    # inbox

    def receive(self, message: Inbound) -> bool:
        """Store ``message``; False when its id was seen before (a duplicate delivery)."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO inbox VALUES (?, ?, ?, 0, ?)",
            (message.platform, message.message_id, message.to_json(), time.time()),
        )
        return cursor.rowcount == 1

    def handled(self, message: Inbound) -> None:
        """``message`` was answered (or refused): keep its id, drop its text."""
        self._db.execute(
            "UPDATE inbox SET handled = 1, record = NULL WHERE platform = ? AND message_id = ?",
            (message.platform, message.message_id),
        )

    def unhandled(self, platform: str) -> list[Inbound]:
        """``platform``'s stored messages not yet answered, oldest first."""
        rows = self._db.execute(
            "SELECT record FROM inbox WHERE platform = ? AND handled = 0 ORDER BY at, rowid",
            (platform,),
        )
        return [Inbound.from_json(record) for (record,) in rows]

    # grants

    def grant(self, platform: str, sender: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO grants VALUES (?, ?, ?)", (platform, sender, time.time())
        )

    def granted(self, platform: str, sender: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM grants WHERE platform = ? AND sender = ?", (platform, sender)
        ).fetchone()
        return row is not None

    def revoke(self, platform: str, sender: str) -> bool:
        """Take a sender's grant back; False when there was none."""
        cursor = self._db.execute(
            "DELETE FROM grants WHERE platform = ? AND sender = ?", (platform, sender)
        )
        return cursor.rowcount == 1

    def grants(self) -> list[tuple[str, str, float]]:
        """Every grant: platform, sender and when it was given."""
        rows = self._db.execute("SELECT platform, sender, at FROM grants ORDER BY platform, at")
        return [(str(p), str(s), float(a)) for p, s, a in rows]

    # rate

    def count(self, platform: str, sender: str, window: float) -> int:
        """Count one message of ``sender`` in the window starting at ``window``; the count."""
        row = self._db.execute(
            "INSERT INTO rate VALUES (?, ?, ?, 1) ON CONFLICT (platform, sender) DO UPDATE SET "
            "count = CASE WHEN window = excluded.window THEN count + 1 ELSE 1 END, "
            "window = excluded.window RETURNING count",
            (platform, sender, window),
        ).fetchone()
        return int(row[0])

    # conversations

    def conversation(self, key: str) -> Conversation:
        row = self._db.execute(
            "SELECT session_id, model FROM conversations WHERE key = ?", (key,)
        ).fetchone()
        return Conversation(key) if row is None else Conversation(key, row[0], row[1])

    def save(self, conversation: Conversation) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO conversations VALUES (?, ?, ?)",
            (conversation.key, conversation.session_id, conversation.model),
        )

    # cursors

    def cursor(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_cursor(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO cursors VALUES (?, ?)", (name, value))
