"""The embedded model's prefix cache on disk: the evaluated system prompt, kept across runs.

Every prompt of a session starts with the same tokens: the system prompt and the tool list. The
llama context keeps them while one provider lives; this cache keeps them across providers and
processes. After the shared prefix is evaluated, llama.cpp's state (its KV cache and the last
logits) is written to ``data_dir/cache/llama/KEY.state``; a later run with the same prefix loads
it instead of evaluating it again.

The key is a hash of everything the state depends on: the model file (its path, size and
modification time), the context size, the llama-cpp-python version and the prefix's tokens. A
change to any of them is another key, so a stale state is never loaded. Each file holds a
header (magic, key, token count, SHA-256 of the state) before the state: a file that is
truncated, corrupt or of another key is deleted and rebuilt, never handed to llama.cpp. The
folder is bounded: after a write, the least recently used files go until it holds at most
``limit_bytes``. Files are written atomically, so concurrent processes at worst evaluate the
same prefix twice.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from openheim.files.atomic import atomic_write

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

MAGIC = b"openheim-llama-prefix 1\n"
SUFFIX = ".state"
MIN_PREFIX_TOKENS = 32
"""Shorter prefixes cost less to evaluate than to load."""
_HEADER_LENGTH = struct.Struct("<I")
MAX_HEADER_BYTES = 4 * 1024 * 1024

Outcome = Literal["memory", "disk", "stored", "off"]
"""``memory``: the context held the prefix already; ``disk``: loaded from the cache; ``stored``:
evaluated and written to the cache; ``off``: no cache (too short a prefix, or no folder)."""


@dataclass(frozen=True)
class PrefixCache:
    """The cache folder of one model file, context size and llama-cpp-python version."""

    folder: Path
    identity: str
    limit_bytes: int

    @classmethod
    def for_model(cls, folder: Path, model: Path, n_ctx: int, limit_bytes: int) -> PrefixCache:
        import llama_cpp

        st = model.stat()
        parts = [str(model.resolve()), str(st.st_size), str(st.st_mtime_ns), str(n_ctx)]
        parts.append(str(getattr(llama_cpp, "__version__", "unknown")))
        return cls(folder, "\0".join(parts), limit_bytes)

    def key(self, prefix: Sequence[int]) -> str:
        digest = hashlib.sha256(self.identity.encode())
        digest.update(struct.pack(f"<{len(prefix)}i", *prefix))
        return digest.hexdigest()

    def prepare(self, llm: Llama, prefix: Sequence[int]) -> Outcome:
        """Leave ``llm`` holding ``prefix`` evaluated: kept, loaded, or evaluated and stored."""
        if len(prefix) < MIN_PREFIX_TOKENS or self.limit_bytes <= 0:
            return "off"
        if llm.n_tokens >= len(prefix) and list(llm.input_ids[: len(prefix)]) == list(prefix):
            return "memory"
        path = self.folder / f"{self.key(prefix)}{SUFFIX}"
        if self._load(llm, path, prefix):
            return "disk"
        llm.reset()  # type: ignore[no-untyped-call]
        llm.eval(prefix)
        self._store(llm, path, prefix)
        return "stored"

    def _load(self, llm: Llama, path: Path, prefix: Sequence[int]) -> bool:
        try:  # a file larger than the whole cache may be is corrupt: never read, rebuilt below
            oversized = path.stat().st_size > self.limit_bytes
            data = b"" if oversized else path.read_bytes()
        except OSError:
            return False
        state = _checked_state(data, self.key(prefix), len(prefix))
        if state is None or not _set_state(llm, state):
            log.warning("ignoring a corrupt prefix cache file %s; it is rebuilt", path)
            with contextlib.suppress(OSError):
                path.unlink()
            llm.reset()  # type: ignore[no-untyped-call]
            return False
        llm.input_ids[: len(prefix)] = prefix
        llm.n_tokens = len(prefix)
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return True

    def _store(self, llm: Llama, path: Path, prefix: Sequence[int]) -> None:
        state = _get_state(llm)
        if len(state) > self.limit_bytes:
            return
        header = json.dumps(
            {
                "key": self.key(prefix),
                "tokens": len(prefix),
                "sha256": hashlib.sha256(state).hexdigest(),
            }
        ).encode()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, MAGIC + _HEADER_LENGTH.pack(len(header)) + header + state)
            self._trim(keep=path)
        except OSError as err:
            log.warning("cannot write the prefix cache %s: %s", path, err.strerror or err)

    def _trim(self, keep: Path) -> None:
        """Delete the least recently used files until the folder fits ``limit_bytes``."""
        files = []
        for entry in self.folder.glob(f"*{SUFFIX}"):
            with contextlib.suppress(OSError):
                st = entry.stat()
                files.append((st.st_mtime_ns, st.st_size, entry))
        total = sum(size for _, size, _ in files)
        for _, size, entry in sorted(files):
            if total <= self.limit_bytes:
                break
            if entry != keep:
                with contextlib.suppress(OSError):
                    entry.unlink()
                    total -= size


def _checked_state(data: bytes, key: str, tokens: int) -> bytes | None:
    """The state in a cache file, or None when the file is not a whole, matching entry."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HEADER_LENGTH.size:
        return None
    (length,) = _HEADER_LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _HEADER_LENGTH.size
    if length > MAX_HEADER_BYTES or start + length > len(data):
        return None
    try:
        header = json.loads(data[start : start + length])
    except ValueError:
        return None
    state = data[start + length :]
    if not isinstance(header, dict) or header.get("key") != key or header.get("tokens") != tokens:
        return None
    return state if hashlib.sha256(state).hexdigest() == header.get("sha256") else None


def _get_state(llm: Llama) -> bytes:
    import llama_cpp

    size = llama_cpp.llama_state_get_size(llm.ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llm.ctx, buffer, size)
    return ctypes.string_at(buffer, written)


def _set_state(llm: Llama, state: bytes) -> bool:
    import llama_cpp

    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    return bool(llama_cpp.llama_state_set_data(llm.ctx, buffer, len(state)) == len(state))
