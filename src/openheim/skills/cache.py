"""A per-file cache keyed by modification time and size.

The system prompt is rebuilt for every model call; its files (``system.md``, ``AGENTS.md``,
skills) rarely change, so each is read and parsed again only when its stat changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class MtimeCache(Generic[T]):
    """``load(path)`` results, reused while the file's mtime and size stay the same."""

    def __init__(self, load: Callable[[Path], T]) -> None:
        self._load = load
        self._entries: dict[Path, tuple[tuple[int, int], T]] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> T:
        """The loaded value of ``path``; OSError (and ``load``'s errors) propagate."""
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            hit = self._entries.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        value = self._load(path)
        with self._lock:
            self._entries[path] = (key, value)
        return value
