"""``open_store``: the store the settings name, SQLite in ``data_dir`` unless a ``store_url``.

``store_url`` (the user's ``config.toml``, or ``OPENHEIM_STORE_URL``) selects the PostgreSQL
store; it needs the ``postgres`` extra (psycopg), imported only then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from openheim.errors import ConfigError

if TYPE_CHECKING:
    from openheim.store.postgres import PostgresStore
    from openheim.store.sqlite import SQLiteStore


def open_store(data_dir: Path, url: str | None = None) -> SQLiteStore | PostgresStore:
    """The PostgreSQL store at ``url`` when one is given, else ``data_dir/openheim.db``."""
    if not url:
        from openheim.store.sqlite import open_store as open_sqlite

        return open_sqlite(data_dir)
    try:
        from openheim.store.postgres import PostgresStore
    except ImportError as err:
        raise postgres_missing(err) from None
    return PostgresStore(url)


def postgres_missing(err: ImportError) -> ConfigError:
    """The error for a ``store_url`` where the ``postgres`` extra is not installed (``err``:
    the failed import of a PostgreSQL module, the store's or the gateway's)."""
    return ConfigError(
        f"store_url needs PostgreSQL support, which is not installed ({err.name} is missing)",
        hint="pip install 'openheim[postgres]', or leave store_url unset for SQLite",
    )
