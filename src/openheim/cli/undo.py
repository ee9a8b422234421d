"""``openheim sessions undo [ID] [--turns N] [--force]`` and ``openheim sessions checkpoints
ID``: undo a session's last turns (``runtime.undo``) and list the checkpoints that make it
possible; ``sessions delete`` drops a session's checkpoints here too."""

from __future__ import annotations

import argparse
import sys
import time

from openheim.config.load import Settings
from openheim.errors import UndoRefused
from openheim.runtime import checkpoints, stored_checkpoints, undo
from openheim.store.common import SqlStore


def undo_command(store: SqlStore, settings: Settings, args: argparse.Namespace) -> None:
    saved = stored_checkpoints.checkpoints_for(settings.data_dir, store)
    if args.sessions_command == "checkpoints":
        _list(store, saved, args.id)
        return
    cwd = str(settings.work_dir)
    record = store.get(args.id) if args.id else store.latest(cwd)
    if record is None:
        raise UndoRefused(f"no stored session in {cwd}", hint="name one: sessions undo ID")
    report = undo.undo(store, saved, record.id, turns=args.turns, force=args.force)
    sys.stdout.write(f"session {record.id[:8]}: {report.summary()}\n")


def drop_checkpoints(settings: Settings, store: SqlStore, session_id: str) -> None:
    """A deleted session's checkpoints go with it (and the blobs no one needs any more)."""
    stored_checkpoints.checkpoints_for(settings.data_dir, store).drop(session_id)


def _list(store: SqlStore, saved: checkpoints.Checkpoints, session_id: str) -> None:
    record = store.get(session_id)
    found = saved.list(record.id)
    if not found:
        sys.stdout.write(f"session {record.id[:8]} has no checkpoints\n")
        return
    starts = undo.turn_starts(store.messages(record.id))
    for checkpoint in found:
        sys.stdout.write(_line(checkpoint, starts) + "\n")


def _line(checkpoint: checkpoints.Checkpoint, starts: list[int]) -> str:
    """One checkpoint: its turn number (1 is the first prompt; the ``--turns`` that undoes it
    in brackets), when, the prompt, and the files."""
    number = starts.index(checkpoint.turn) + 1 if checkpoint.turn in starts else 0
    back = len(starts) - number + 1 if number else 0
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(checkpoint.created_at))
    files = ", ".join(sorted(checkpoint.files)) or "(no file written by the tools)"
    shell = f"; changed by shell: {', '.join(checkpoint.shell_changed)}"
    head = f"turn {number} (--turns {back})" if number else "turn ? (no longer in the history)"
    return f"{head}  {when}  {checkpoint.prompt!r}\n    {files}" + (
        shell if checkpoint.shell_changed else ""
    )
