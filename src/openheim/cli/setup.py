"""``openheim setup``: registers ``openheim mcp serve`` with Claude Code, Codex and OpenCode.

Each client's config file (``setup_files``) gets our one entry added, replaced or (with
``--remove``) removed; nothing else in it changes. A changed file is first copied to a
timestamped backup next to it, then replaced atomically; an unchanged one is not written.
``--dry-run`` prints the unified diff instead and writes nothing. A refused file (a symlink,
another user's, one that does not parse) is reported and left alone, and the command exits 1.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from pathlib import Path
from typing import Any

from openheim.cli.setup_files import CLIENTS, Client, Refused, new_text, read_owned
from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write
from openheim.term import exit_codes


def add_setup(setup: argparse.ArgumentParser) -> None:
    setup.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    setup.add_argument("--remove", action="store_true", help="remove openheim's entry instead")
    setup.add_argument(
        "--only",
        metavar="CLIENTS",
        help=f"comma-separated clients (default: all of {','.join(CLIENTS)})",
    )


def setup_command(args: argparse.Namespace) -> int:
    clients = _chosen(args.only)
    command = server_command()
    env = server_env()
    home = Path.home()
    refused = 0
    for client in clients:
        try:
            entry = None if args.remove else client.entry(command, env)
            line = _one(client, home, entry, dry_run=args.dry_run)
        except Refused as err:
            refused += 1
            line = f"refused: {err}"
        sys.stdout.write(f"{client.name}: {line}\n")
    return exit_codes.ERROR if refused else exit_codes.OK


def server_command() -> list[str]:
    """How a client starts our MCP server: the running ``openheim`` program by its absolute
    path, else this Python running the package."""
    script = Path(sys.argv[0])
    if script.name == "openheim" and script.is_file():
        return [str(script.absolute()), "mcp", "serve"]
    return [sys.executable, "-m", "openheim", "mcp", "serve"]


def server_env() -> dict[str, str]:
    """The environment the server needs to find this configuration: ``OPENHEIM_HOME`` (made
    absolute) when it is set; nothing otherwise."""
    raw = os.environ.get("OPENHEIM_HOME")
    return {"OPENHEIM_HOME": str(Path(raw).expanduser().absolute())} if raw else {}


def _chosen(only: str | None) -> list[Client]:
    if only is None:
        return list(CLIENTS.values())
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in CLIENTS]
    if unknown or not names:
        named = ", ".join(unknown) if unknown else repr(only)
        raise ConfigError(
            f"--only names no known client: {named}",
            hint=f"choose among {', '.join(CLIENTS)}",
        )
    return [CLIENTS[name] for name in dict.fromkeys(names)]


def _one(client: Client, home: Path, entry: dict[str, Any] | None, *, dry_run: bool) -> str:
    """Set our entry (None: remove it) in one client's file; the line that says what
    happened."""
    path = client.where(home)
    old = read_owned(path)
    remove = entry is None
    if old is None and remove:
        return f"unchanged (no {path})"
    new = new_text(client, path, old or "", entry)
    if new == (old or "") and old is not None:
        return f"unchanged ({path})"
    had = old is not None and client.edit(old, None) != old
    done = "removed from" if remove else ("updated in" if had else "added to")
    if dry_run:
        sys.stdout.write(_diff(path, old or "", new))
        return f"would be {done} {path} (dry run: nothing written)"
    backup = _write(path, old, new)
    kept = f"; the old file is kept as {backup}" if backup else ""
    return f"{done} {path}{kept}"


def _diff(path: Path, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"{path}", f"{path} (new)"
    )
    text = "".join(lines)
    return text if text.endswith("\n") else text + "\n"


def _write(path: Path, old: str | None, new: str) -> Path | None:
    """Back up the old file (if any), then replace it atomically; a new file is private
    (0600: these files may hold tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    backup = None if old is None else _backup(path, old)
    atomic_write(path, new.encode("utf-8"), 0o600 if old is None else None)
    return backup


def _backup(path: Path, old: str) -> Path:
    """A copy of the old text as ``NAME.TIMESTAMP.bak``, with the file's own mode."""
    mode = path.lstat().st_mode & 0o777
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for count in range(100):
        suffix = "" if count == 0 else f"-{count}"
        backup = path.with_name(f"{path.name}.{stamp}{suffix}.bak")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(backup, flags, mode)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(old.encode("utf-8"))
        return backup
    raise Refused(f"{path}: too many backups made this second", hint="try again in a second")
