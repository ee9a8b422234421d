"""The theme of the terminal UI, kept under ``[tui] theme`` in the user's ``config.toml``
(comments and layout of the file kept)."""

from __future__ import annotations

from pathlib import Path

import tomlkit

from openheim.errors import ConfigError
from openheim.formats.tomledit import load_document, save_document


def save_theme(config: Path, name: str) -> None:
    """Write ``[tui] theme = name`` into ``config``, leaving everything else as it was."""
    document = load_document(config)
    table = document.get("tui")
    if table is None:
        table = tomlkit.table()
        document.add("tui", table)
    if not isinstance(table, dict):
        raise ConfigError(f"{config}: tui is not a table", hint="write it as [tui]")
    table["theme"] = name
    save_document(config, document)
