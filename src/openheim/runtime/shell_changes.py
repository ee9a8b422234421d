"""Which files of the work dir a shell command changed, found by comparing modification times.

Undo restores what the file tools wrote; a shell command's effects are out of its reach. To say
so where it matters, the work dir's files are listed (size and modification time, no content)
before a turn's first ``execute_command`` and compared after each one. The walk is cheap or it
is skipped: it stops after ``MAX_ENTRIES`` entries, never follows a symlink, and leaves out
``.git`` folders.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_ENTRIES = 20_000
SKIPPED = frozenset({".git"})

Snapshot = dict[str, tuple[int, int]]
"""Each regular file's absolute path with its ``(mtime_ns, size)``."""


def snapshot(root: Path, limit: int = MAX_ENTRIES) -> Snapshot | None:
    """The work dir's files, or None when it holds more than ``limit`` entries (too costly)."""
    found: Snapshot = {}
    todo = [str(root)]
    seen = 0
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return None
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name not in SKIPPED:
                    todo.append(entry.path)
            elif stat.S_ISREG(st.st_mode):
                found[entry.path] = (st.st_mtime_ns, st.st_size)
    return found


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Files created, changed or deleted between two snapshots, sorted."""
    paths = {p for p in after if before.get(p) != after[p]}
    paths |= {p for p in before if p not in after}
    return sorted(paths)
