"""``openheim sessions migrate --to postgresql://...``: copy the SQLite store of ``data_dir``
(sessions, messages, usage, compactions, pins, frames, undo checkpoints) into a PostgreSQL
store (``runtime.store_migration``), then say what was copied. The URL is checked and opened
as ``store_url`` is (``store.opener``); its password is never shown."""

from __future__ import annotations

import sys

from openheim.config.load import Settings
from openheim.errors import ConfigError
from openheim.runtime import store_migration, stored_checkpoints
from openheim.store.opener import open_store
from openheim.store.sqlite import DB_NAME, SQLiteStore
from openheim.term import exit_codes


def migrate_command(settings: Settings, url: str) -> int:
    """Copy what the target lacks; a second run copies nothing and says so."""
    if not url.strip():  # the opener would take an empty URL for "SQLite"
        raise ConfigError(
            "--to is not a postgresql:// URL",
            hint="write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE",
        )
    path = settings.data_dir / DB_NAME
    if not path.is_file():
        raise ConfigError(
            f"there is no SQLite session store at {path} to migrate",
            hint="run the migration as the user (or with the OPENHEIM_HOME) whose sessions"
            " these are",
        )
    with open_store(settings.data_dir, url) as target:  # a URL gives the PostgreSQL store
        from openheim.store.pg_link import redacted

        shown = redacted(url.strip())
        with SQLiteStore(path) as source:
            done = store_migration.migrate(
                source,
                stored_checkpoints.checkpoints_for(settings.data_dir, source),
                target,
                stored_checkpoints.checkpoints_for(settings.data_dir, target),
            )
    for session_id in done.unreadable:
        sys.stdout.write(f"session {session_id}: checkpoints unreadable, copied without them\n")
    sys.stdout.write(_summary(done, shown) + "\n")
    return exit_codes.OK


def _summary(done: store_migration.Migration, shown: str) -> str:
    there = f"{done.present} session{'s' if done.present != 1 else ''}"
    if not done.copied:
        return f"nothing to copy: {there}, all already in {shown} (message counts verified)"
    return (
        f"copied {done.copied} session{'s' if done.copied != 1 else ''} ({done.messages}"
        f" messages, {done.checkpoints} checkpoints) to {shown}; {there} already there;"
        " message counts verified"
    )
