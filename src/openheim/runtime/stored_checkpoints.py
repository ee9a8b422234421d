"""Undo checkpoints in the session database (the PostgreSQL store's ``checkpoint_rows``), with
the interface and the checks of the file-based ``CheckpointStore``.

Every machine sharing a PostgreSQL store then undoes the same turns from the same contents.
A blob is kept once per SHA-256 and read back only when it still has that digest; a manifest is
read by ``Checkpoint.from_json``'s allow-list, and one that is not valid refuses the undo.
``checkpoints_for`` picks this store or the files under ``data_dir``.
"""

from __future__ import annotations

import time
from pathlib import Path

from openheim.errors import UndoRefused
from openheim.runtime.checkpoints import (
    BLOB_GRACE,
    Checkpoint,
    Checkpoints,
    CheckpointStore,
    digest,
)
from openheim.store.checkpoint_rows import CheckpointRows


class StoredCheckpoints:
    """``Checkpoints`` kept in the store's tables."""

    where = "the session database"

    def __init__(self, rows: CheckpointRows) -> None:
        self.rows = rows

    def put_blob(self, data: bytes) -> str:
        """Keep ``data`` (once per content); its digest."""
        key = digest(data)
        self.rows.put_blob(key, data)
        return key

    def has_blob(self, key: str) -> bool:
        """Whether the blob ``key`` is there and still holds the content of that digest."""
        data = self.rows.blob(key)
        return data is not None and digest(data) == key

    def blob(self, key: str) -> bytes:
        data = self.rows.blob(key)
        if data is None:
            raise FileNotFoundError(f"no checkpoint blob {key}")
        return data

    def save(self, checkpoint: Checkpoint) -> None:
        self.rows.save(checkpoint.session_id, checkpoint.turn, checkpoint.to_json())

    def list(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest turn first."""
        return sorted((_parsed(m) for m in self.rows.manifests(session_id)), key=_turn)

    def remove(self, checkpoint: Checkpoint) -> None:
        self.rows.remove(checkpoint.session_id, checkpoint.turn)

    def drop(self, session_id: str) -> None:
        """Forget every checkpoint of a session (it was deleted), then prune the blobs."""
        self.rows.remove(session_id)
        self.prune()

    def prune(self, min_age: float = BLOB_GRACE) -> int:
        """Delete the blobs no manifest names that are older than ``min_age`` seconds; how
        many. A manifest that cannot be read names nothing."""
        named: set[str] = set()
        for manifest in self.rows.manifests():
            try:
                files = _parsed(manifest).files.values()
            except UndoRefused:
                continue
            named |= {state.before for state in files if state.before is not None}
        return self.rows.prune_blobs(named, time.time() - min_age)


def checkpoints_for(data_dir: Path, store: object) -> Checkpoints:
    """The checkpoints of ``store``'s database when it keeps them (its ``checkpoint_rows``),
    else files in ``data_dir``."""
    rows = getattr(store, "checkpoint_rows", None)
    if isinstance(rows, CheckpointRows):
        return StoredCheckpoints(rows)
    return CheckpointStore(data_dir)


def _parsed(manifest: bytes) -> Checkpoint:
    try:
        return Checkpoint.from_json(manifest)
    except (ValueError, KeyError, TypeError) as err:
        raise UndoRefused(
            f"a stored checkpoint cannot be read ({type(err).__name__}: {err})",
            hint="undo then leaves that turn's files as they are; delete the session's"
            " checkpoints with sessions delete",
        ) from None


def _turn(checkpoint: Checkpoint) -> int:
    return checkpoint.turn
