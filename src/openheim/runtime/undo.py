"""Undo: restore the files of a session's last turns from their checkpoints and rewind its
conversation to before them.

A turn starts at a user message that carries no tool results (a prompt). Undoing the last ``N``
turns restores every file the tools changed in them to its content before the earliest of
them (a file they created is removed), then cuts the stored history back to that prompt. Before
anything is touched, each file must still be as openheim left it: a file changed outside
openheim since (edited, replaced, deleted) makes the undo refuse, naming it, unless ``force``;
a path where something other than a regular file with one name stands now (a hard link, a
symlink, a folder) makes it refuse even then, and each file is checked again, on a descriptor,
just before it is replaced or removed.
Every file must lie inside the work dir the session recorded: a checkpoint naming another
place (it was edited) refuses the undo before anything is touched, even with ``force``.
Files a shell command changed are reported, never restored. The session's lease is held
throughout, so a prompt cannot run in the session meanwhile.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openheim.errors import ConfigError, SandboxError, UndoRefused
from openheim.files.atomic import atomic_write_at
from openheim.messages import Message, ToolResultBlock
from openheim.runtime.checkpoints import (
    Checkpoint,
    Checkpoints,
    FileState,
    digest_now,
    real_parent,
)
from openheim.store.base import SessionStore
from openheim.tools.builtin.fs import not_plain, open_regular_at
from openheim.tools.sandbox import PathSandbox


@dataclass(frozen=True)
class UndoReport:
    """What an undo did: the turns undone, the history length left, the files restored and
    removed, and those a shell command changed (not restored)."""

    turns: int
    kept_messages: int
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    shell_changed: tuple[str, ...]

    def summary(self) -> str:
        """Lines for a person: what changed and what undo could not restore."""
        lines = [f"undid {self.turns} turn{'s' if self.turns != 1 else ''}"]
        lines += [f"restored {path}" for path in self.restored]
        lines += [f"removed {path}" for path in self.removed]
        if self.shell_changed:
            lines.append(
                "not restored (changed by shell commands): " + ", ".join(self.shell_changed)
            )
        return "\n".join(lines)


def undo_arguments(text: str) -> tuple[int, bool]:
    """The turns and force of a chat's ``undo [N] [--force]`` (the REPL, the terminal UI and
    ACP's ``/undo``); a bad argument raises ``ConfigError``."""
    words = text.split()
    counts = [w for w in words if w != "--force"]
    if len(counts) > 1 or (counts and not counts[0].isdigit()):
        raise ConfigError(
            f"undo takes a number of turns and --force, got {text!r}", hint="e.g. undo 2 --force"
        )
    return (int(counts[0]) if counts else 1), "--force" in words


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """The history index of each prompt: a user message with no tool results."""
    return [
        index
        for index, message in enumerate(messages)
        if message.role == "user"
        and not any(isinstance(b, ToolResultBlock) for b in message.content)
    ]


@dataclass
class _Plan:
    """What an undo would do: the state to restore each file to (its state before the earliest
    undone turn), the files changed outside openheim since, and those that are not a regular
    file with one name now (with what they are)."""

    target: dict[str, FileState] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def _plan(checkpoints: Sequence[Checkpoint]) -> _Plan:
    """The plan of undoing ``checkpoints``, walking them from the newest."""
    plan = _Plan()
    expected: dict[str, str | None] = {}
    for checkpoint in sorted(checkpoints, key=lambda c: c.turn, reverse=True):
        for path, state in checkpoint.files.items():
            now = expected[path] if path in expected else _digest(path, plan.refused)
            if now != state.after and path not in plan.conflicts:
                plan.conflicts.append(path)
            expected[path] = state.before
            plan.target[path] = state
    plan.conflicts.sort()
    return plan


def _digest(path: str, refused: dict[str, str]) -> str | None:
    """The digest of ``path`` now; ``"?"`` when it cannot be read, after noting in ``refused``
    what stands there when that is not a regular file with one name (nor nothing)."""
    try:
        return digest_now(Path(path))
    except OSError as err:
        why = not_plain(err)
        if why is not None:
            refused[path] = why
        return "?"


def _refuse(refused: dict[str, str]) -> UndoRefused:
    """The refusal of an undo that would replace or remove something that is not a regular
    file with one name, which ``--force`` does not override."""
    return UndoRefused(
        "not a plain file now: " + "; ".join(f"{p} {why}" for p, why in sorted(refused.items())),
        hint="undo replaces or removes only a regular file with one name, even with --force: "
        "give a hard link a copy of its own (cp F F.tmp && mv F.tmp F) or move it away, then "
        "undo again; nothing was changed",
        paths=tuple(sorted(refused)),
    )


def _confine(undone: Sequence[Checkpoint], work_dir: str, store: Checkpoints) -> None:
    """Refuse the undo unless every file of ``undone`` lies beneath ``work_dir``, the work dir
    the session recorded, by the sandbox's own rule (``PathSandbox.contains``; the files are
    then reached with no symlink on the way). Only a manifest edited by someone else names
    another place, and an undo must never write there."""
    paths = sorted({path for checkpoint in undone for path in checkpoint.files})
    if not paths:
        return
    try:
        sandbox = PathSandbox(work_dir) if Path(work_dir).is_absolute() else None
    except SandboxError:
        sandbox = None
    if sandbox is None:
        raise UndoRefused(
            f"the work dir {work_dir!r} of this session is not a folder now, so its files "
            "cannot be restored",
            hint="restore that folder first; nothing was changed",
        )
    outside = [p for p in paths if not sandbox.contains(p) or Path(p) in sandbox.roots]
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if outside[3:] else "")
        raise UndoRefused(
            f"the checkpoint names files outside the work dir {work_dir}: {shown}",
            hint=f"openheim never records such a file, so the checkpoint in {store.where} "
            "was edited: delete that session's folder there; nothing was changed",
            paths=tuple(outside),
        )


def _plain_or_absent(folder: int, name: str) -> None:
    """Raise ``OSError`` unless nothing, or a regular file with one name, stands at ``name``:
    the restore's own check, on a descriptor opened with ``O_NOFOLLOW`` just before the name is
    replaced (by a rename, which never writes through a link) or removed."""
    with contextlib.suppress(FileNotFoundError):
        open_regular_at(folder, name).close()


def _restore(store: Checkpoints, path: Path, state: FileState) -> str | None:
    """Put ``path`` back as ``state`` had it before: ``restored``, ``removed`` (the turn
    created it) or None (nothing to do: it is absent, as it was). Its folder is reached with
    no symlink on the way (``real_parent``), so a folder swapped for a link since the turn
    stops the undo instead of leading it out of the work dir, and a hard link or a symlink
    swapped in at its name stops it too (``_plain_or_absent``)."""
    if state.before is None:
        try:
            with real_parent(path) as (folder, name):
                _plain_or_absent(folder, name)
                os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            return None
        return "removed"
    data = store.blob(state.before)
    with real_parent(path, create=True) as (folder, name):
        _plain_or_absent(folder, name)
        atomic_write_at(folder, name, data, state.mode)
    return "restored"


def _restore_all(store: Checkpoints, target: dict[str, FileState]) -> dict[str, list[str]]:
    """Restore every file (each blob is checked to be there first); the paths restored and
    removed. A file that cannot be written stops the undo before the history is rewound."""
    for path, state in target.items():
        if state.before is not None and not store.has_blob(state.before):
            raise UndoRefused(
                f"the checkpointed content of {path} is missing from {store.where} or damaged",
                hint="that file cannot be restored; nothing was changed",
            )
    done: dict[str, list[str]] = {"restored": [], "removed": []}
    for path, state in sorted(target.items()):
        try:
            what = _restore(store, Path(path), state)
        except OSError as err:
            restored = ", ".join([*done["restored"], *done["removed"]]) or "none"
            raise UndoRefused(
                f"could not restore {path}: {err.strerror or err} (already restored: {restored})",
                hint="fix the file's folder or permissions and undo again with --force (the "
                "files already restored differ from the checkpoint now); the conversation was "
                "not rewound",
            ) from None
        if what is not None:
            done[what].append(path)
    return done


def undo(
    sessions: SessionStore,
    checkpoints: Checkpoints,
    session_id: str,
    *,
    turns: int = 1,
    force: bool = False,
) -> UndoReport:
    """Undo the last ``turns`` turns of the stored session (see the module docstring)."""
    if turns < 1:
        raise UndoRefused(f"--turns must be 1 or more, got {turns}", hint="undo at least 1 turn")
    with sessions.acquire(session_id):
        messages = sessions.messages(session_id)
        starts = turn_starts(messages)
        if len(starts) < turns:
            raise UndoRefused(
                f"session {session_id[:8]} has {len(starts)} turn{'s' if len(starts) != 1 else ''}"
                f", fewer than the {turns} to undo",
                hint=f"undo at most {len(starts)}" if starts else "there is nothing to undo",
            )
        start = starts[-turns]
        undone = [c for c in checkpoints.list(session_id) if c.turn >= start]
        record = sessions.get(session_id)
        _confine(undone, record.cwd, checkpoints)
        plan = _plan(undone)
        if plan.refused:
            raise _refuse(plan.refused)
        if plan.conflicts and not force:
            raise UndoRefused(
                "changed outside openheim since the checkpoint: " + ", ".join(plan.conflicts),
                hint="keep those changes, or undo with --force to overwrite them",
                paths=tuple(plan.conflicts),
            )
        done = _restore_all(checkpoints, plan.target)
        sessions.restore(record, messages[:start], replace=True)
        for checkpoint in undone:
            checkpoints.remove(checkpoint)
    checkpoints.prune()
    shell = sorted({p for c in undone for p in c.shell_changed})
    return UndoReport(turns, start, tuple(done["restored"]), tuple(done["removed"]), tuple(shell))


def undo_stored(
    data_dir: Path,
    session_id: str | None,
    cwd: str,
    *,
    turns: int = 1,
    force: bool = False,
    store_url: str | None = None,
) -> tuple[str, UndoReport]:
    """``undo`` in the session store of ``data_dir`` (or ``store_url``): the session
    ``session_id`` (an id or prefix), or the latest one of ``cwd``; its full id and the report."""
    from openheim.runtime.stored_checkpoints import checkpoints_for
    from openheim.store import open_store

    with open_store(data_dir, store_url) as store:
        record = store.get(session_id) if session_id else store.latest(cwd)
        if record is None:
            raise UndoRefused(f"no stored session in {cwd}", hint="name one: sessions undo ID")
        report = undo(store, checkpoints_for(data_dir, store), record.id, turns=turns, force=force)
    return record.id, report
