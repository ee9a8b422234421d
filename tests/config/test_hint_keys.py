"""Every config key a message names exists: hints and notices say ``set KEY`` (a key of any
table, ``gateway.webhook_host`` by its table) or ``[TABLE] KEY`` (followed by "to", "=",
punctuation or the end), and each is checked against the config schema. The tools' own
messages are left out: they speak to the model of a call's arguments (``set replace_all``)."""

from __future__ import annotations

import ast
import dataclasses
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

import openheim
from openheim.config.schema import ConfigFile

SOURCE = Path(openheim.__file__).parent
NOT_CONFIG = ("tools",)
"""The package's folders whose messages name tool arguments, not config keys."""
SET_KEY = re.compile(r"\bset ([a-z]+_[a-z_]*[a-z]|[a-z_]+\.[a-z_]+)\b")
TABLE_KEY = re.compile(r"\[([a-z_]+)\] ([a-z_]+)(?= to\b| =|[`'\".,)]|$)")


def _table(hint: object) -> type | None:
    """The dataclass a field's type names (through ``X | None`` and ``dict[str, X]``)."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, dict, typing.Annotated):
        for arg in typing.get_args(hint):
            found = _table(arg)
            if found is not None:
                return found
    return None


def tables() -> dict[str, set[str]]:
    """Each table of ``config.toml`` ("" for the top level) and its keys."""
    hints = typing.get_type_hints(ConfigFile, include_extras=True)
    found = {"": set(hints)}
    for name, hint in hints.items():
        table = _table(hint)
        if table is not None:
            found[name] = {f.name for f in dataclasses.fields(table)}
    return found


def texts() -> Iterator[tuple[str, str]]:
    """Every string in the package's source (f-strings by their literal parts), with where."""
    for path in sorted(SOURCE.rglob("*.py")):
        if path.relative_to(SOURCE).parts[0] in NOT_CONFIG:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{path.relative_to(SOURCE)}:{node.lineno}", node.value


def keys_in(text: str) -> list[tuple[str, str]]:
    """(table, key) for each key ``text`` names in a hint's form; table "*" when any."""
    found = []
    for match in SET_KEY.finditer(text):
        table, _, key = match[1].rpartition(".")
        found.append((table or "*", key))
    found += [(m[1], m[2]) for m in TABLE_KEY.finditer(text) if m[1] in tables()]
    return found


def named_keys() -> list[tuple[str, str, str]]:
    """(where, table, key) for each key a string of the package names."""
    return [(where, *named) for where, text in texts() for named in keys_in(text)]


def test_every_named_key_exists() -> None:
    known = tables()
    every = set().union(*known.values())
    wrong = [
        f"{where}: {table}.{key}" if table != "*" else f"{where}: {key}"
        for where, table, key in named_keys()
        if key not in (every if table == "*" else known.get(table, set()))
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("set compaction_model to a model", [("*", "compaction_model")]),
        ("set [compaction] model to a model", [("compaction", "model")]),
        ("set gateway.webhook_host and", [("gateway", "webhook_host")]),
        ("kept under [tui] theme.", [("tui", "theme")]),
        ("[memory] sets a but not b", []),
        ("[gateway] ignored: only yours", []),
        ("set both to search", []),
    ],
)
def test_the_forms_a_hint_names_a_key_in(text: str, named: list[tuple[str, str]]) -> None:
    found = [
        (m[1].rpartition(".")[0] or "*", m[1].rpartition(".")[2]) for m in SET_KEY.finditer(text)
    ]
    found += [(m[1], m[2]) for m in TABLE_KEY.finditer(text) if m[1] in tables()]
    assert found == named
