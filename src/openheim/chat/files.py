"""The files a ``@`` mention may name: those of the work dir that git would not ignore and that
no deny-read pattern names, found breadth-first up to ``LIMIT``; and a fuzzy match over them."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from openheim.redaction.secrets import SecretPolicy

LIMIT = 5000
SKIPPED = {".git", ".hg", ".svn"}


def work_files(root: Path, policy: SecretPolicy, limit: int = LIMIT) -> list[str]:
    """Paths relative to ``root`` (with ``/``), shallow ones first, at most ``limit``."""
    from openheim.tools.builtin.gitignore import GitIgnores  # the picker's, not start-up's
    from openheim.tools.sandbox import PathSandbox

    ignores = GitIgnores(PathSandbox(root))
    found: list[str] = []
    pending: deque[tuple[str, ...]] = deque([()])
    while pending and len(found) < limit:
        folder = pending.popleft()
        ignores.load(folder)
        try:
            entries = sorted(os.scandir(root.joinpath(*folder)), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            parts = (*folder, entry.name)
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.name in SKIPPED or ignores.ignored(parts, is_dir):
                continue
            shown = "/".join(parts)
            if policy.match(Path(entry.path), shown) is not None:
                continue
            if is_dir:
                pending.append(parts)
            elif entry.is_file(follow_symlinks=False):
                found.append(shown)
    return found[:limit]


def fuzzy(query: str, names: list[str], limit: int = 50) -> list[str]:
    """Names holding ``query``'s characters in order, tightest and shortest first."""
    if not query:
        return names[:limit]
    wanted = query.lower()
    scored: list[tuple[int, int, str]] = []
    for name in names:
        spread = _spread(wanted, name.lower())
        if spread is not None:
            scored.append((spread, len(name), name))
    scored.sort()
    return [name for _, _, name in scored[:limit]]


def _spread(wanted: str, name: str) -> int | None:
    """How far apart ``wanted``'s characters lie in ``name`` (None: not all there)."""
    start = at = name.find(wanted[0])
    if at < 0:
        return None
    for char in wanted[1:]:
        at = name.find(char, at + 1)
        if at < 0:
            return None
    return at - start
