"""``CompactionLog``: the compactions of each session and its pinned prompts, kept beside its
messages.

A compaction replaces a session's oldest messages, in what the model is sent, by a summary
(or by a note that they were left out). The messages themselves stay in the store untouched,
so an export or a replay still shows the whole conversation; this log records where each
compaction cut and what replaced the messages before the cut, so a resumed session is sent
what it was sent before, and which user prompts are pinned (sent verbatim after a summary).
Entries go with the session when it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openheim.store.tables import TableSet

Method = Literal["summary", "trim"]


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction: the first ``covered`` messages are replaced by ``head`` (a summary, or a
    note that they were left out), with the estimated tokens of the request before and after."""

    covered: int
    head: str
    method: Method
    before_tokens: int
    after_tokens: int
    created_at: float = 0.0
    digest: str = ""
    """SHA-256 of the covered messages as stored, so a history rewound since (an undo) is told
    apart from the one compacted."""


class CompactionLog(TableSet):
    """The compaction log of one store (``SQLiteStore.compactions``, ``PostgresStore``'s)."""

    def append(self, session_id: str, entry: Compaction) -> None:
        """Record ``entry`` as the session's latest compaction."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO session_compactions (session_id, covered, head, method,"
                " before_tokens, after_tokens, created_at, digest)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    entry.covered,
                    entry.head,
                    entry.method,
                    entry.before_tokens,
                    entry.after_tokens,
                    entry.created_at,
                    entry.digest,
                ),
            )

    def entries(self, session_id: str) -> list[Compaction]:
        """The session's compactions, oldest first."""
        rows = self._read(
            "SELECT covered, head, method, before_tokens, after_tokens, created_at, digest"
            " FROM session_compactions WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [
            Compaction(
                int(row["covered"]),
                str(row["head"]),
                "trim" if row["method"] == "trim" else "summary",
                int(row["before_tokens"]),
                int(row["after_tokens"]),
                float(row["created_at"]),
                str(row["digest"]),
            )
            for row in rows
        ]

    def latest(self, session_id: str) -> Compaction | None:
        """The session's last compaction, if it has one."""
        found = self.entries(session_id)
        return found[-1] if found else None

    def pin(self, session_id: str, message: int) -> None:
        """Pin the message at index ``message`` of the session's history (pinning twice is
        pinning once)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO session_pins (session_id, message) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                (session_id, message),
            )

    def pins(self, session_id: str) -> list[int]:
        """The indices of the session's pinned messages, in order."""
        rows = self._read(
            "SELECT message FROM session_pins WHERE session_id = ? ORDER BY message",
            (session_id,),
        )
        return [int(row["message"]) for row in rows]
