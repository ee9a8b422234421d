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

The store is private: its folders are ``0700`` and its files ``0600``, as they hold the user's
file contents. A manifest is read by allow-list (absolute normalised paths, digests of 64 hex
digits, plain modes), and a file is only ever reached from ``/`` with no symlink on the way: the
paths recorded are real paths, so a symlink found there later was planted since, and reading,
restoring or removing through it is refused. Only a regular file with one name is read, by the
file tools' own rule (``open_regular_at``, checked with ``fstat`` on the opened descriptor): a
hard link's content is never kept, since another of its names may be a secret outside the work
dir that an undo would then write back under the innocent one. A file over ``MAX_BLOB_BYTES``
is not kept either.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openheim.errors import SandboxError, UndoRefused
from openheim.files.atomic import atomic_write
from openheim.redaction.secrets import redact
from openheim.tools.builtin.fs import HardLinkError, not_plain, open_regular_at
from openheim.tools.pathwalk import PathWalk, stopped

MANIFEST_VERSION = 1
BLOB_GRACE = 3600.0
"""Seconds a blob no manifest names is kept before ``prune`` may delete it."""
MAX_BLOB_BYTES = 64 * 1024 * 1024
"""The largest file a checkpoint keeps; undo leaves a larger one as it is (a notice says so)."""
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


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
        # ASCII with escapes: a prompt holding a lone surrogate is still written
        return json.dumps(body, indent=1).encode("ascii")

    @classmethod
    def from_json(cls, data: bytes) -> Checkpoint:
        """The checkpoint in ``data``; ValueError naming the first field that is not allowed."""
        raw = json.loads(data)
        _want(isinstance(raw, dict) and raw.get("version") == MANIFEST_VERSION, "version")
        files = raw.get("files")
        _want(isinstance(files, dict), "files")
        shell = raw.get("shell_changed", [])
        _want(isinstance(shell, list) and all(_is_real_path(p) for p in shell), "shell_changed")
        return cls(
            _session_id(raw.get("session_id")),
            _number(raw.get("turn"), int, "turn"),
            float(_number(raw.get("created_at"), (int, float), "created_at")),
            _string(raw.get("prompt"), "prompt"),
            {_path(path): _file_state(state) for path, state in files.items()},
            list(shell),
        )


def _want(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"its {what} is not what openheim writes")


def _session_id(value: Any) -> str:
    """``value`` when it is a plain name (letters, digits, ``-``, ``_``): never a path."""
    if not isinstance(value, str) or not _SESSION_ID.fullmatch(value):
        raise ValueError(f"not a session id: {value!r}")
    return value


def _number(value: Any, kinds: type | tuple[type, ...], what: str) -> Any:
    _want(isinstance(value, kinds) and not isinstance(value, bool), what)
    _want(value >= 0, what)
    return value


def _string(value: Any, what: str) -> str:
    _want(isinstance(value, str), what)
    return str(value)


def _is_real_path(path: Any) -> bool:
    """An absolute, normalised path below ``/`` (how the sandbox hands paths to the tools)."""
    return (
        isinstance(path, str)
        and path.startswith("/")
        and path != "/"
        and "\x00" not in path
        and os.path.normpath(path) == path
        and not path.startswith("//")
    )


def _path(path: Any) -> str:
    _want(_is_real_path(path), f"path {str(path)[:80]!r}")
    return str(path)


def _file_state(raw: Any) -> FileState:
    _want(isinstance(raw, dict) and set(raw) <= {"before", "after", "mode"}, "file state")
    digests = [raw.get("before"), raw.get("after")]
    _want(all(d is None or _DIGEST.fullmatch(str(d)) for d in digests), "digests")
    mode = raw.get("mode")
    _want(mode is None or (type(mode) is int and 0 <= mode <= 0o7777), "mode")
    return FileState(digests[0], digests[1], mode)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def real_parent(path: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """A descriptor of the folder of ``path`` and its last name, the folder reached from ``/``
    one component at a time with no symlink followed (``OSError`` ELOOP when one is there).
    Missing folders raise ``FileNotFoundError``, or are made when ``create``."""
    try:
        with PathWalk((Path("/"),), str(path), follow=False) as walk:
            rest = walk.descend(path.parts[1:], last="keep", create=create)
            if len(rest) != 1:
                raise stopped(walk.fd, rest[0]) if rest else IsADirectoryError(str(path))
            yield walk.fd, rest[0]
    except SandboxError as err:
        raise OSError(errno.ELOOP, err.message) from None


@contextlib.contextmanager
def _open_file(path: Path) -> Iterator[tuple[io.BufferedReader, os.stat_result] | None]:
    """The file at ``path`` opened for reading and its status, by the file tools' rule
    (``open_regular_at``): a regular file with one name, reached with no symlink on the way
    (``real_parent``); None when nothing is there. Anything else raises ``OSError``: a hard
    link ``HardLinkError``, a symlink ``ELOOP``, a folder, a FIFO or a device."""
    try:
        with real_parent(path) as (folder, name):
            fh = open_regular_at(folder, name)
    except FileNotFoundError:
        yield None
        return
    with fh:
        yield fh, os.fstat(fh.fileno())


def not_kept(path: Path, err: OSError) -> str:
    """The warning of a turn whose checkpoint could not keep ``path``'s content, and what to
    do about it."""
    why = not_plain(err) or f"could not be read ({err.strerror or err})"
    line = f"undo will not restore {path}: it {why}"
    if isinstance(err, HardLinkError):
        line += (
            "; a checkpoint never keeps a hard link's content (another of its names may be a "
            "secret elsewhere): give the file a copy of its own (cp F F.tmp && mv F.tmp F) "
            "to make its changes undoable"
        )
    return line


def read_file(path: Path) -> tuple[bytes, int] | None:
    """A regular file's bytes and mode (see ``_open_file``); None when nothing is there.
    ``OSError`` EFBIG for a file over ``MAX_BLOB_BYTES``, which is not read."""
    with _open_file(path) as found:
        if found is None:
            return None
        fh, st = found
        data = fh.read(MAX_BLOB_BYTES + 1)
        if len(data) > MAX_BLOB_BYTES:
            raise OSError(errno.EFBIG, f"it is over {MAX_BLOB_BYTES} bytes")
        return data, stat.S_IMODE(st.st_mode)


def digest_now(path: Path) -> str | None:
    """The digest of the file at ``path`` now (None: absent), read in chunks whatever its
    size; ``OSError`` (see ``_open_file``) when what stands there is not a regular file with
    one name."""
    with _open_file(path) as found:
        return None if found is None else hashlib.file_digest(found[0], "sha256").hexdigest()


def _load(path: Path) -> Checkpoint:
    """The checkpoint in ``path``; an ``UndoRefused`` naming the file when it cannot be read."""
    try:
        return Checkpoint.from_json(path.read_bytes())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UndoRefused(
            f"the checkpoint {path} cannot be read ({type(err).__name__}: {err})",
            hint="delete that file; undo then leaves that turn's files as they are",
        ) from None


class Checkpoints(Protocol):
    """Where checkpoints are kept: files (``CheckpointStore``) or the session database
    (``runtime.stored_checkpoints``); ``where`` names the place in messages."""

    where: str

    def put_blob(self, data: bytes) -> str: ...
    def has_blob(self, key: str) -> bool: ...
    def blob(self, key: str) -> bytes: ...
    def save(self, checkpoint: Checkpoint) -> None: ...
    def list(self, session_id: str) -> list[Checkpoint]: ...
    def remove(self, checkpoint: Checkpoint) -> None: ...
    def drop(self, session_id: str) -> None: ...
    def prune(self, min_age: float = BLOB_GRACE) -> int: ...


class CheckpointStore:
    """The blobs and manifests under ``data_dir/checkpoints``."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "checkpoints"
        self.where = str(self.root)

    def _private_folder(self, *names: str) -> Path:
        """The folder ``root/names...``, each level made ``0700`` when missing."""
        folder = self.root
        for name in ("", *names):
            folder = folder / name if name else folder
            with contextlib.suppress(FileExistsError):
                folder.mkdir(PRIVATE_FOLDER, parents=True)
        return folder

    def put_blob(self, data: bytes) -> str:
        """Keep ``data`` (once per content); its digest."""
        key = digest(data)
        path = self._blob_path(key)
        if not path.exists():
            self._private_folder("blobs", key[:2])
            atomic_write(path, data, PRIVATE_FILE)
        return key

    def has_blob(self, key: str) -> bool:
        """Whether the blob ``key`` is there and still holds the content of that digest."""
        try:
            with self._blob_path(key).open("rb") as fh:
                return hashlib.file_digest(fh, "sha256").hexdigest() == key
        except (OSError, ValueError):  # missing, unreadable, or a manifest edited by hand
            return False

    def blob(self, key: str) -> bytes:
        return self._blob_path(key).read_bytes()

    def _blob_path(self, key: str) -> Path:
        if len(key) != 64 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"not a blob digest: {key!r}")
        return self.root / "blobs" / key[:2] / key

    def _folder(self, session_id: str) -> Path:
        return self.root / _session_id(session_id)

    def save(self, checkpoint: Checkpoint) -> None:
        folder = self._private_folder(self._folder(checkpoint.session_id).name)
        atomic_write(folder / f"{checkpoint.turn:08d}.json", checkpoint.to_json(), PRIVATE_FILE)

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
        """Forget every checkpoint of a session (it was deleted), readable or not, then prune
        the blobs no one needs any more."""
        folder = self._folder(session_id)
        for manifest in folder.glob("*.json"):
            with contextlib.suppress(FileNotFoundError):
                manifest.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()
        self.prune()

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

    def __init__(self, store: Checkpoints, session_id: str) -> None:
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
            try:
                checkpoint.files[str(path)].after = digest_now(path)
            except OSError:  # "?" never equals a recorded state
                checkpoint.files[str(path)].after = "?"
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
