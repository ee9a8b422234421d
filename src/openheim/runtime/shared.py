"""``Shared``: what the sessions of one ``Runtime`` use in common instead of each opening its own.

A server keeps hundreds of sessions open at once; a SQLite connection costs about 120 KiB and
opening one runs the schema check, so every session of a runtime borrows one store per data dir
(or per PostgreSQL ``store_url``, whose pool the sessions then share). The store is opened by
the first session that needs it and closed when the last one that borrowed it is closed, so a
single ``openheim run`` opens and closes its store exactly as before. Each write is one
transaction, so sessions sharing a store cannot interleave inside one.

The HTTP clients of the sessions' providers are lent the same way (``clients``, see
``runtime.clients``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from openheim.runtime.clients import ClientPool

if TYPE_CHECKING:
    from openheim.store.base import SessionStore
    from openheim.store.common import SqlStore


class Shared:
    """Store connections lent to sessions, one per data dir, counted; and HTTP clients."""

    def __init__(self) -> None:
        self._stores: dict[tuple[Path, str | None], tuple[SqlStore, int]] = {}
        self.clients = ClientPool()
        """The HTTP clients lent to the sessions' providers."""

    def borrow_store(self, data_dir: Path, url: str | None = None) -> SqlStore:
        """The store of ``data_dir`` (PostgreSQL's at ``url`` when given), opened if no session
        holds it; ``give_back`` it later."""
        key = (data_dir.resolve(), url or None)
        found = self._stores.get(key)
        if found is None:
            from openheim.store.opener import open_store

            found = (open_store(data_dir, url), 0)
        self._stores[key] = (found[0], found[1] + 1)
        return found[0]

    def store_loan(self, data_dir: Path, url: str | None = None) -> StoreLoan:
        """``borrow_store`` as a context manager: the store is given back on exit."""
        return StoreLoan(self, self.borrow_store(data_dir, url))

    def give_back(self, store: SessionStore) -> None:
        """One borrower is done with ``store``; the last one closes it."""
        for key, (held, count) in list(self._stores.items()):
            if held is not store:
                continue
            if count > 1:
                self._stores[key] = (held, count - 1)
            else:
                del self._stores[key]
                held.close()
            return

    @property
    def open_stores(self) -> int:
        """How many store connections are open now."""
        return len(self._stores)


class StoreLoan:
    """A borrowed store, given back when the ``with`` block (a session's exit stack) ends;
    lighter for a session to hold than a callback closure."""

    __slots__ = ("_shared", "_store")

    def __init__(self, shared: Shared, store: SqlStore) -> None:
        self._shared = shared
        self._store = store

    def __enter__(self) -> SqlStore:
        return self._store

    def __exit__(self, *exc_info: object) -> None:
        self._shared.give_back(self._store)
