"""``openheim sessions``: list, show, delete, export, search, import and compact stored
sessions; undo turns and list checkpoints (``cli/undo.py``); copy them to PostgreSQL
(``cli/migrate.py``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from openheim.config.load import Settings, load_settings
from openheim.errors import ConfigError
from openheim.store import SessionRecord, open_store
from openheim.store.common import SqlStore
from openheim.term import exit_codes


def sessions_command(args: argparse.Namespace) -> int:
    if args.sessions_command == "compact":
        from openheim.cli.compact import compact_command

        return compact_command(args.id)
    settings = load_settings()
    if args.sessions_command == "migrate":
        from openheim.cli.migrate import migrate_command

        return migrate_command(settings, args.to)
    with open_store(settings.data_dir, settings.store_url) as store:
        action = args.sessions_command or "list"
        if action == "list":
            _list(store, settings, cwd=args.cwd, limit=args.limit)
        elif action == "show":
            from openheim.store.export import export_markdown

            sys.stdout.write(export_markdown(store, store.get(args.id).id))
        elif action == "delete":
            record = store.get(args.id)
            store.delete(record.id)
            from openheim.cli.undo import drop_checkpoints

            drop_checkpoints(settings, store, record.id)
            sys.stdout.write(f"deleted {record.id} ({record.title or 'untitled'})\n")
        elif action in ("undo", "checkpoints"):
            from openheim.cli.undo import undo_command

            undo_command(store, settings, args)
        elif action == "export":
            _export(store, args.id, args.format, args.output)
        elif action == "search":
            _search(store, " ".join(args.text), args.limit)
        else:
            _import(store, settings, args.source)
    return exit_codes.OK


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def _row(record: SessionRecord) -> str:
    title = record.title or "(untitled)"
    return (
        f"{record.id[:8]}  {_when(record.updated_at)}  {record.message_count:>5} msgs  "
        f"{record.provider}/{record.model}  {title}"
    )


def _list(store: SqlStore, settings: Settings, *, cwd: bool, limit: int) -> None:
    where = str(settings.work_dir) if cwd else None
    records = store.list(cwd=where, limit=limit)
    if not records:
        sys.stdout.write("no sessions yet\n")
    for record in records:
        sys.stdout.write(_row(record) + "\n")


def _export(store: SqlStore, session_id: str, fmt: str, output: str | None) -> None:
    from openheim.store.export import export_json, export_markdown

    record = store.get(session_id)
    text = export_json(store, record.id) if fmt == "json" else export_markdown(store, record.id)
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    from openheim.files.atomic import atomic_write

    atomic_write(Path(output), text.encode("utf-8", "replace"))  # a lone surrogate: "?"
    sys.stdout.write(f"wrote {output}\n")


def _search(store: SqlStore, text: str, limit: int) -> None:
    if not text.strip():
        raise ConfigError("nothing to search for", hint="give some words: sessions search WORDS")
    hits = store.search(text, limit=limit)
    if not hits:
        sys.stdout.write("no matches\n")
    for hit in hits:
        sys.stdout.write(f"{hit.session_id[:8]}  {hit.title or '(untitled)'}\n    {hit.snippet}\n")


def _import(store: SqlStore, settings: Settings, source: str | None) -> None:
    from openheim.store.export import import_json
    from openheim.store.importer import import_rust_history

    path = Path(source).expanduser() if source else settings.data_dir / "history"
    if path.is_file():
        record = import_json(store, path.read_text(encoding="utf-8"))
        sys.stdout.write(f"imported {record.id} ({record.message_count} messages)\n")
        return
    if not path.is_dir():
        raise ConfigError(
            f"{path} is neither a folder nor a file",
            hint="pass a Rust Openheim history folder or a file from `sessions export`",
        )
    count = import_rust_history(store, path)
    sys.stdout.write(f"imported {count} session{'s' if count != 1 else ''} from {path}\n")
