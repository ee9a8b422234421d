"""Editing TOML files that people write by hand: their comments, order and layout are kept.

``tomlkit`` parses a file into a document that writes back byte for byte, so a change touches
only the entries it adds or removes. Import this module only where a file is rewritten (``tomlkit``
takes tens of milliseconds to import); reading goes through ``tomlfile`` and ``tomllib``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tomlkit
from tomlkit import TOMLDocument
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Array, InlineTable, String, Table

from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write


def load_document(path: Path, header: Sequence[str] = ()) -> TOMLDocument:
    """The file as an editable document, or a new one opening with ``header`` comment lines."""
    if not path.is_file():
        document = tomlkit.document()
        for line in header:
            document.add(tomlkit.comment(line))
        return document
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (TOMLKitError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: invalid TOML: {err}", hint="fix the file") from None


def array_in(document: TOMLDocument, table: str, key: str) -> Array:
    """The array ``table.key``, added (one entry a line) with its table when missing."""
    if table not in document:
        document.add(table, tomlkit.table())
    holder = document[table]
    if not isinstance(holder, Table | InlineTable):
        raise ConfigError(f"{table} is not a table", hint=f"write it as [{table}]")
    if key not in holder:
        holder[key] = tomlkit.array().multiline(True)
    entries = holder[key]
    if not isinstance(entries, Array):
        raise ConfigError(f"{table}.{key} is not a list", hint=f"write it as {key} = [...]")
    return entries


def toml_string(text: str) -> String:
    """A literal string ``'...'`` when ``text`` needs no escapes (easier to read), else a basic
    one."""
    return tomlkit.string(text, literal="'" not in text and text.isprintable())


def save_document(path: Path, document: TOMLDocument) -> None:
    """Write the document atomically: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, document.as_string().encode("utf-8"))
