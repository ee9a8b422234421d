"""The error tree: every error in ``openheim.errors``' docstring is defined there, derives from
what the tree says, and the session store's errors stay importable from where they were."""

from __future__ import annotations

import re

import pytest

import openheim.store
from openheim import errors
from openheim.store import base, export, schema

_ROW = re.compile(r"^(?P<indent>[ │]*(?:├── |└── )?)(?P<name>[A-Z]\w+) {2,}")
"""A line of the tree: the drawing in front of a name (its depth), then the name."""


def tree() -> dict[str, str | None]:
    """Each error named in the docstring's tree, with its parent."""
    body = (errors.__doc__ or "").split("Hierarchy::", 1)[1]
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in body.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        depth, name = len(row.group("indent")), row.group("name")
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def test_every_error_in_the_tree_is_defined_under_its_parent() -> None:
    parents = tree()
    assert parents["ContextOverflow"] == "ProviderError" and parents["OpenheimError"] is None
    assert {"SessionNotFound", "SessionBusy", "StoreError", "InvalidExport"} <= set(parents)
    for name, parent in parents.items():
        cls = getattr(errors, name)
        if parent is not None:
            assert issubclass(cls, getattr(errors, parent)), (name, parent)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (base, "SessionNotFound"),
        (base, "SessionBusy"),
        (base, "SessionExists"),
        (base, "StoreError"),
        (export, "InvalidExport"),
        (schema, "SchemaError"),
    ],
)
def test_store_errors_are_the_same_classes_where_they_used_to_be(module: object, name: str) -> None:
    cls = getattr(errors, name)
    assert getattr(module, name) is cls
    assert issubclass(cls, errors.OpenheimError)
    if name not in ("InvalidExport", "SchemaError"):
        assert getattr(openheim.store, name) is cls


def test_a_missing_session_is_a_usage_error_and_says_what_to_do() -> None:
    err = errors.SessionNotFound("abc123")
    assert err.usage_error and str(err) == (
        "no session 'abc123' (pass the id (or its first 6+ characters) of a listed session)"
    )
