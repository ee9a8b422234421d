"""Session persistence: the ``SessionStore`` interface and its embedded SQLite backend.

Importing this package loads only the interface; ``sqlite3`` and the backend are imported on
first use of ``open_store`` or ``SQLiteStore``, so start-up stays cheap.

- ``base``: ``SessionStore``, ``SessionRecord``, ``Lease``, ``SearchHit`` and ``repair_history``
- the errors ``SessionNotFound``, ``SessionBusy``, ``SessionExists`` and ``StoreError``, which
  belong to the error tree of ``openheim.errors``
- ``sqlite``: ``SQLiteStore`` and ``open_store(data_dir)`` (``data_dir/openheim.db``)
- ``importer``: ``import_rust_history`` (the Rust Openheim's ``history/`` folder)
- ``export``: ``export_json`` / ``import_json`` and ``export_markdown``
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openheim.errors import SessionBusy, SessionExists, SessionNotFound, StoreError
from openheim.store.base import Lease, SearchHit, SessionRecord, SessionStore, repair_history

if TYPE_CHECKING:
    from openheim.store.export import export_json as export_json
    from openheim.store.export import export_markdown as export_markdown
    from openheim.store.export import import_json as import_json
    from openheim.store.importer import import_rust_history as import_rust_history
    from openheim.store.sqlite import SQLiteStore as SQLiteStore
    from openheim.store.sqlite import open_store as open_store

_LAZY = {
    "SQLiteStore": "openheim.store.sqlite",
    "open_store": "openheim.store.sqlite",
    "import_rust_history": "openheim.store.importer",
    "export_json": "openheim.store.export",
    "import_json": "openheim.store.export",
    "export_markdown": "openheim.store.export",
}

__all__ = [
    "Lease",
    "SearchHit",
    "SessionBusy",
    "SessionExists",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "StoreError",
    "repair_history",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openheim.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
