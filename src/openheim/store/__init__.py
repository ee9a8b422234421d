"""Session persistence: the ``SessionStore`` interface, its embedded SQLite backend and its
PostgreSQL one.

Importing this package loads only the interface; a backend is imported on first use of
``open_store``, ``SQLiteStore`` or ``PostgresStore``, so start-up stays cheap.

- ``base``: ``SessionStore``, ``SessionRecord``, ``Lease``, ``SearchHit`` and ``repair_history``
- the errors ``SessionNotFound``, ``SessionBusy``, ``SessionExists`` and ``StoreError``, which
  belong to the error tree of ``openheim.errors``
- ``sqlite``: ``SQLiteStore`` (``data_dir/openheim.db``); ``postgres``: ``PostgresStore``
- ``opener``: ``open_store(data_dir, store_url)``, the one the settings name
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
    from openheim.store.opener import open_store as open_store
    from openheim.store.postgres import PostgresStore as PostgresStore
    from openheim.store.sqlite import SQLiteStore as SQLiteStore

_LAZY = {
    "SQLiteStore": "openheim.store.sqlite",
    "open_store": "openheim.store.opener",
    "PostgresStore": "openheim.store.postgres",
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
