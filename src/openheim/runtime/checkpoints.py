"""Checkpoints: the prior content of every file the tools change in a turn, kept for undo.

Before a turn's first write of a file, its bytes (binary or text alike) go to a blob named by
their SHA-256 under ``data_dir/checkpoints/blobs/``, so a content kept by many turns is stored
once; a file that did not exist is recorded as absent. Each turn's checkpoint is one small JSON
manifest, ``data_dir/checkpoints/SESSION/TURN.json``, where ``TURN`` is the index in the
session's history of the message that started the turn. After each write the manifest also
records the digest of what the tool left on disk, which is how ``undo`` recognises a file
changed outside openheim since. It is written before the first change and after each one, so a
process killed mid-turn still leaves a usable checkpoint. This is openheim's own store, never a
git repository of the user's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openheim.errors import UndoRefused
from openheim.fsutil import atomic_write
from openheim.secrets import redact

MANIFEST_VERSION = 1
BLOB_GRACE = 3600.0
"""Seconds a blob no manifest names is kept before ``prune`` may delete it."""


@dataclass
class FileState:
    """One file of a checkpoint: its content before the turn and after the tools' last write
    (blob digests; None when no file was there) and its mode before."""

    before: str | None
    after: str | None
    mode: int | None = None


@dataclass
class Checkpoint:
    """What one turn changed: the files by absolute path, and those a shell command changed
    (reported, never restored)."""

    session_id: str
    turn: int
    """The index in the session's history of the message that started the turn."""
    created_at: float
    prompt: str
    files: dict[str, FileState] = field(default_factory=dict)
    shell_changed: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        body = {"version": MANIFEST_VERSION, **asdict(self)}
        return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> Checkpoint:
        raw = json.loads(data)
        files = {path: FileState(**state) for path, state in raw["files"].items()}
        return cls(
            raw["session_id"],
            int(raw["turn"]),
            float(raw["created_at"]),
            str(raw["prompt"]),
            files,
            list(raw.get("shell_changed", [])),
        )


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_file(path: Path) -> tuple[bytes, int] | None:
    """A regular file's bytes and mode, not following a symlink; None when nothing is there.
    Raises ``IsADirectoryError`` (or another ``OSError``) for anything that is not a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return fh.read(), stat.S_IMODE(st.st_mode)


def current_digest(path: Path) -> str | None:
    """The digest of the file at ``path`` now (None: absent); ``"?"`` when it is something
    that is not a regular file, so that it never equals a recorded state."""
    try:
        found = read_file(path)
    except OSError:
        return "?"
    return None if found is None else digest(found[0])


def _load(path: Path) -> Checkpoint:
    """The checkpoint in ``path``; an ``UndoRefused`` naming the file when it cannot be read."""
    try:
        return Checkpoint.from_json(path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UndoRefused(
            f"the checkpoint {path} cannot be read ({type(err).__name__}: {err})",
            hint="delete that file; undo then leaves that turn's files as they are",
        ) from None


class CheckpointStore:
    """The blobs and manifests under ``data_dir/checkpoints``."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "checkpoints"

    def put_blob(self, data: bytes) -> str:
        """Keep ``data`` (once per content); its digest."""
        key = digest(data)
        path = self._blob_path(key)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
        return key

    def has_blob(self, key: str) -> bool:
        try:
            return self._blob_path(key).is_file()
        except ValueError:  # a manifest edited by hand
            return False

    def blob(self, key: str) -> bytes:
        return self._blob_path(key).read_bytes()

    def _blob_path(self, key: str) -> Path:
        if len(key) != 64 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"not a blob digest: {key!r}")
        return self.root / "blobs" / key[:2] / key

    def _folder(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.root / session_id

    def save(self, checkpoint: Checkpoint) -> None:
        folder = self._folder(checkpoint.session_id)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / f"{checkpoint.turn:08d}.json", checkpoint.to_json())

    def list(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest turn first."""
        folder = self._folder(session_id)
        if not folder.is_dir():
            return []
        found = [_load(path) for path in sorted(folder.glob("*.json"))]
        return sorted(found, key=lambda c: c.turn)

    def remove(self, checkpoint: Checkpoint) -> None:
        folder = self._folder(checkpoint.session_id)
        with contextlib.suppress(FileNotFoundError):
            (folder / f"{checkpoint.turn:08d}.json").unlink()

    def drop(self, session_id: str) -> None:
        """Forget every checkpoint of a session (it was deleted)."""
        for checkpoint in self.list(session_id):
            self.remove(checkpoint)
        with contextlib.suppress(OSError):
            self._folder(session_id).rmdir()

    def prune(self, min_age: float = BLOB_GRACE) -> int:
        """Delete the blobs no manifest names that are older than ``min_age`` seconds (a
        younger one may belong to a checkpoint being written right now); how many."""
        named: set[str] = set()
        for manifest in self.root.glob("*/*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                files = Checkpoint.from_json(manifest.read_bytes()).files.values()
                named |= {state.before for state in files if state.before is not None}
        removed, cutoff = 0, time.time() - min_age
        for blob in self.root.glob("blobs/*/*"):
            with contextlib.suppress(OSError):
                if blob.name not in named and blob.stat().st_mtime <= cutoff:
                    blob.unlink()
                    removed += 1
        return removed


class TurnRecorder:
    """Records one session's checkpoints as its turns change files (see the module docstring).

    ``begin`` starts a turn; the first ``before_write`` of a path in it keeps the path's prior
    content, every ``written`` records what is on disk after the write."""

    def __init__(self, store: CheckpointStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.current: Checkpoint | None = None
        self._turn = 0
        self._prompt = ""
        self._lock = threading.Lock()  # subagents may write files in parallel threads

    def begin(self, turn: int, prompt: str) -> None:
        self.current = None
        self._turn, self._prompt = turn, redact(" ".join(prompt.split()))[:120]

    def _checkpoint(self) -> Checkpoint:
        if self.current is None:
            self.current = Checkpoint(self.session_id, self._turn, time.time(), self._prompt)
        return self.current

    def before_write(self, path: Path) -> None:
        """Keep ``path``'s content unless this turn already did (blocking: call in a thread).
        Raises ``OSError`` when it cannot be read; the write then goes on unrecorded."""
        key = str(path)
        with self._lock:
            if self.current is not None and key in self.current.files:
                return
            found = read_file(path)
            before = None if found is None else self.store.put_blob(found[0])
            mode = None if found is None else found[1]
            checkpoint = self._checkpoint()
            checkpoint.files[key] = FileState(before, before, mode)
            self.store.save(checkpoint)

    def written(self, path: Path) -> None:
        """Record what the write left at ``path`` (blocking: call in a thread)."""
        with self._lock:
            checkpoint = self.current
            if checkpoint is None or str(path) not in checkpoint.files:
                return
            checkpoint.files[str(path)].after = current_digest(path)
            self.store.save(checkpoint)

    def tool_written(self) -> set[str]:
        """The paths the tools wrote in this turn."""
        with self._lock:
            return set(self.current.files) if self.current is not None else set()

    def shell_changed(self, paths: list[str]) -> None:
        """Note files a shell command changed in this turn (undo reports them)."""
        with self._lock:
            checkpoint = self._checkpoint()
            checkpoint.shell_changed = sorted({*checkpoint.shell_changed, *paths})
            self.store.save(checkpoint)
