"""Copy one session store into another: ``openheim sessions migrate --to postgresql://...``.

Moving from the embedded SQLite store to a shared PostgreSQL one copies, per session, its
record (title, usage, cost, parent), its messages exactly as stored, its compactions and
pinned prompts, its frame log and its undo checkpoints (the manifests, and the file contents
they name, read from ``data_dir/checkpoints`` and written as rows of the database). Each
session is copied in one transaction of the target, so a copy stopped half-way leaves whole
sessions only, and a rerun carries on: a session the target already holds with as many
messages is left alone. Parents are copied before their forks, so a fork keeps its parent.
Nothing is written to the source. At the end every session's message count is compared on
both sides; a difference is an error naming the sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from openheim.errors import SessionNotFound, StoreError, UndoRefused
from openheim.runtime.checkpoints import Checkpoints
from openheim.store.base import SessionRecord
from openheim.store.common import SqlStore

PAGE = 500
"""Sessions listed from the source per query."""


@dataclass
class Migration:
    """What a copy did: sessions copied and already there, messages and checkpoints copied,
    and the sessions whose checkpoints could not be read (copied without them)."""

    copied: int = 0
    present: int = 0
    messages: int = 0
    checkpoints: int = 0
    unreadable: list[str] = field(default_factory=list)


def migrate(
    source: SqlStore,
    source_checkpoints: Checkpoints,
    target: SqlStore,
    target_checkpoints: Checkpoints,
    *,
    copied: Callable[[SessionRecord], None] = lambda record: None,
) -> Migration:
    """Copy every session of ``source`` missing from ``target`` (see the module docstring);
    ``copied`` is told of each one once it is committed. Raises ``StoreError`` naming the
    sessions whose message counts differ afterwards."""
    done = Migration()
    records = sorted(_all(source), key=lambda r: (r.created_at, r.id))
    for record in records:
        if _count(target, record.id) is not None:
            done.present += 1
            continue
        _copy(record, source, source_checkpoints, target, target_checkpoints, done)
        copied(record)
    _verify(records, target)
    return done


def _all(store: SqlStore) -> Iterator[SessionRecord]:
    """Every session of ``store``, newest updated first, a page at a time."""
    before: float | None = None
    while page := store.list(limit=PAGE, before=before):
        yield from page
        before = page[-1].updated_at


def _count(store: SqlStore, session_id: str) -> int | None:
    """The message count of the session in ``store``; None when it is not there."""
    try:
        return store.get(session_id).message_count
    except SessionNotFound:
        return None


def _copy(
    record: SessionRecord,
    source: SqlStore,
    source_checkpoints: Checkpoints,
    target: SqlStore,
    target_checkpoints: Checkpoints,
    done: Migration,
) -> None:
    """One session and everything kept with it, in one transaction of ``target``."""
    sid = record.id
    messages = source.stored_messages(sid)
    with target.transaction():
        target.restore(record, messages)
        for entry in source.compactions.entries(sid):
            target.compactions.append(sid, entry)
        for pin in source.compactions.pins(sid):
            target.compactions.pin(sid, pin)
        target.frames.append([(sid, seq, body) for seq, body in source.frames.after(sid, 0)])
        turns = _copy_checkpoints(sid, source_checkpoints, target_checkpoints, done)
    done.copied += 1
    done.messages += len(messages)
    done.checkpoints += turns


def _copy_checkpoints(
    session_id: str, source: Checkpoints, target: Checkpoints, done: Migration
) -> int:
    """The session's checkpoints and the blobs they name (those still intact); how many."""
    try:
        found = source.list(session_id)
    except UndoRefused:
        done.unreadable.append(session_id)
        return 0
    for checkpoint in found:
        for state in checkpoint.files.values():
            key = state.before
            if key is not None and source.has_blob(key) and not target.has_blob(key):
                target.put_blob(source.blob(key))
        target.save(checkpoint)
    return len(found)


def _verify(records: list[SessionRecord], target: SqlStore) -> None:
    """Every session of the source is in ``target`` with as many messages."""
    wrong = []
    for record in records:
        there = _count(target, record.id)
        if there != record.message_count:
            has = "is missing" if there is None else f"has {there} messages"
            wrong.append(f"{record.id} ({has} there, {record.message_count} here)")
    if wrong:
        raise StoreError(
            f"the copy differs for {len(wrong)} session(s): {'; '.join(wrong)}",
            hint="a session changed in the target since an earlier copy is left as it is;"
            " delete it there and run the migration again to copy it anew",
        )
