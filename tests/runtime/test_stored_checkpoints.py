"""Undo checkpoints in the PostgreSQL store's database: blobs once per content and checked
against their digest when read, manifests per turn, pruning of blobs no manifest names, and the
choice between the database and files under ``data_dir``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from openheim.errors import UndoRefused
from openheim.runtime.checkpoints import Checkpoint, CheckpointStore, FileState, digest
from openheim.runtime.stored_checkpoints import StoredCheckpoints, checkpoints_for
from openheim.store.postgres import PostgresStore
from openheim.store.sqlite import open_store


@pytest.fixture
def stored(pg_url: str) -> Iterator[tuple[PostgresStore, StoredCheckpoints]]:
    with PostgresStore(pg_url) as store:
        saved = checkpoints_for(Path("/nonexistent"), store)
        assert isinstance(saved, StoredCheckpoints)
        yield store, saved


def test_the_sqlite_store_keeps_checkpoints_in_files(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        assert isinstance(checkpoints_for(tmp_path, store), CheckpointStore)
    assert isinstance(checkpoints_for(tmp_path, None), CheckpointStore)


def test_blobs_manifests_and_pruning(stored: tuple[PostgresStore, StoredCheckpoints]) -> None:
    store, saved = stored
    sid = store.create(cwd="/w", provider="p", model="m").id
    key = saved.put_blob(b"\x00binary\xff")
    assert key == saved.put_blob(b"\x00binary\xff") == digest(b"\x00binary\xff")
    assert saved.blob(key) == b"\x00binary\xff" and saved.has_blob(key)
    orphan = saved.put_blob(b"no manifest names me")
    first = Checkpoint(sid, 2, 1.0, "second", {"/w/a": FileState(key, key, 0o644)})
    saved.save(Checkpoint(sid, 0, 0.0, "first"))
    saved.save(first)
    assert [c.turn for c in saved.list(sid)] == [0, 2]
    assert saved.list(sid)[1] == first
    assert saved.prune(min_age=0) == 1
    assert not saved.has_blob(orphan) and saved.has_blob(key)
    saved.remove(first)
    assert [c.turn for c in saved.list(sid)] == [0]
    saved.drop(sid)
    assert saved.list(sid) == [] and saved.prune(min_age=0) == 1


def test_a_damaged_blob_or_manifest_is_never_used(
    stored: tuple[PostgresStore, StoredCheckpoints], pg_url: str
) -> None:
    store, saved = stored
    sid = store.create(cwd="/w", provider="p", model="m").id
    key = saved.put_blob(b"content")
    saved.save(Checkpoint(sid, 1, 0.0, "x", {"/w/a": FileState(key, key, 0o644)}))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE checkpoint_blobs SET data = 'tampered'::bytea")
        conn.execute("UPDATE session_checkpoints SET manifest = '{\"files\": 1}'")
    assert not saved.has_blob(key)
    assert not saved.has_blob("0" * 64)
    with pytest.raises(FileNotFoundError):
        saved.blob("0" * 64)
    with pytest.raises(UndoRefused, match="a stored checkpoint cannot be read"):
        saved.list(sid)
