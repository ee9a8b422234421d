"""The input history: prompts and commands typed before, kept across runs in
``data_dir/chat_history`` (one JSON string a line, the newest last, at most ``LIMIT``)."""

from __future__ import annotations

import json
from pathlib import Path

from openheim.files.atomic import atomic_write

LIMIT = 1000
FILE = "chat_history"


class InputHistory:
    """Typed lines to walk with Up and Down; ``add`` stores one and ends the walk."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = _load(path) if path is not None else []
        self._at = len(self.entries)
        self._draft = ""

    def add(self, line: str) -> None:
        """Keep ``line`` (not a repeat of the last one) and write the file."""
        self._at = len(self.entries)
        if not line.strip() or (self.entries and self.entries[-1] == line):
            return
        self.entries = [*self.entries, line][-LIMIT:]
        self._at = len(self.entries)
        if self.path is not None:
            self._save(self.path)

    def previous(self, current: str) -> str | None:
        """The entry before the one shown (None at the oldest); the typed draft is kept."""
        if self._at == len(self.entries):
            self._draft = current
        if self._at == 0:
            return None
        self._at -= 1
        return self.entries[self._at]

    def next(self) -> str | None:
        """The entry after the one shown, the draft after the newest, None past it."""
        if self._at >= len(self.entries):
            return None
        self._at += 1
        return self.entries[self._at] if self._at < len(self.entries) else self._draft

    def _save(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.entries)
            atomic_write(path, text.encode("utf-8"))
        except OSError:
            return  # a history that cannot be written is not worth stopping a chat for


def history_for(data_dir: Path) -> InputHistory:
    """The input history kept in ``data_dir`` (shared by the UI and the REPL)."""
    return InputHistory(data_dir / FILE)


def _load(path: Path) -> list[str]:
    try:
        raw = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    lines: list[str] = []
    for row in raw[-LIMIT:]:
        try:
            value = json.loads(row)
        except ValueError:
            continue
        if isinstance(value, str):
            lines.append(value)
    return lines
