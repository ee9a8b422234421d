"""The file operations of the ``fs`` channel, confined to the work dir as the tools are.

Paths resolve through the tools' ``PathSandbox`` (``..``, absolute paths and symlinks that
lead out are refused) and the deny-read patterns apply as to the file tools. Files are then
reached from a descriptor of their folder with symlinks refused on the way (``parent``), so a
folder swapped for a link after the check stops the call. A read opens regular files only
(without blocking on a FIFO); a write replaces the file atomically, as the tools do.
``delete`` and ``rename`` act on the last name itself: a symlink is removed or renamed, never
its target, and the work dir itself is refused. A rename is refused when deny-read names any
path at or beneath its source, or any path it would make at or beneath its target (the folder
is walked first, bounded), so a rename cannot give a secret a readable name.
"""

from __future__ import annotations

import base64
import errno
import itertools
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openheim.errors import SandboxError
from openheim.redaction.secrets import SecretPolicy, redact
from openheim.tools.base import ToolContext
from openheim.tools.builtin.fs import open_regular, write_bytes_at
from openheim.tools.pathwalk import LIST_FLAGS

MAX_READ_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 10_000
MAX_MOVED = 10_000
"""The most entries a renamed folder may hold: each is checked against deny_read first."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    return "dir" if stat.S_ISDIR(mode) else "file"


def list_dir(ctx: ToolContext, raw: str, recursive: bool) -> list[dict[str, Any]]:
    """The entries of folder ``raw`` (of its subfolders too when ``recursive``); symlinks are
    listed, never followed."""
    top = ctx.sandbox.resolve(raw, ctx.cwd)
    out: list[dict[str, Any]] = []
    pending = [top]
    while pending and len(out) < MAX_ENTRIES:
        folder = pending.pop()
        with ctx.sandbox.folder(folder) as fd, os.scandir(fd) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                info = entry.stat(follow_symlinks=False)
                path = folder / entry.name
                kind = _kind(info.st_mode)
                out.append(
                    {
                        "path": ctx.display(path),
                        "name": entry.name,
                        "type": kind,
                        "size": info.st_size,
                    }
                )
                if recursive and kind == "dir":
                    pending.append(path)
    return out[:MAX_ENTRIES]


def read_file(ctx: ToolContext, raw: str) -> dict[str, Any]:
    """A file's text (UTF-8, secrets redacted), or its bytes in base64 when it is not text."""
    path = ctx.path(raw)
    try:
        file = open_regular(ctx.sandbox, path)  # never blocks on a FIFO, never follows a link
    except OSError as err:
        if err.errno != errno.EINVAL:
            raise
        raise SandboxError(f"{raw} is not a regular file", hint="read a regular file") from None
    with file:
        data = file.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise SandboxError(f"{raw} is over {MAX_READ_BYTES} bytes", hint="read a smaller file")
    try:
        return {"path": ctx.display(path), "encoding": "utf-8", "content": redact(data.decode())}
    except UnicodeDecodeError:
        encoded = base64.b64encode(data).decode()
        return {"path": ctx.display(path), "encoding": "base64", "content": encoded}


def write_file(ctx: ToolContext, raw: str, content: str) -> str:
    """Write ``content`` (UTF-8) to a file atomically, as ``write_file`` does; missing folders
    are made. The file is replaced, never opened: a FIFO cannot block the write, and a hard
    link to a file elsewhere is not written through."""
    path = ctx.path(raw, write=True)
    write_bytes_at(ctx.sandbox, path, content.encode(), create=True)
    return ctx.display(path)


def make_dir(ctx: ToolContext, raw: str) -> str:
    path = ctx.sandbox.resolve(raw, ctx.cwd, write=True)
    with ctx.sandbox.parent(path, create=True) as (fd, name):
        os.mkdir(name, 0o755, dir_fd=fd)
    return ctx.display(path)


def _own_name(ctx: ToolContext, raw: str) -> Path:
    """The path of the name ``raw`` itself: its folder resolved, its last part kept as it is
    (a symlink stays a symlink). The work dir itself is refused."""
    if not raw or "\x00" in raw:
        raise SandboxError("empty path or a path with a NUL byte", hint="give a path")
    folder, name = os.path.split(os.path.normpath(raw))
    if name in ("", ".", "..") or os.path.normpath(ctx.cwd / raw) == str(ctx.sandbox.root):
        raise SandboxError(
            "the work dir itself cannot be deleted or renamed", hint="name a path inside it"
        )
    return ctx.sandbox.resolve(folder or ".", ctx.cwd) / name


def delete(ctx: ToolContext, raw: str) -> str:
    """Delete a file, a symlink (not its target) or a folder with what it holds."""
    path = _own_name(ctx, raw)
    with ctx.sandbox.parent(path) as (fd, name):
        mode = os.lstat(name, dir_fd=fd).st_mode
        if stat.S_ISDIR(mode):
            shutil.rmtree(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    return ctx.display(path)


def rename(ctx: ToolContext, raw: str, to: str) -> str:
    """Rename ``raw`` (a symlink itself, not its target) to ``to``, which must not exist.

    Allowed only when no path at or beneath ``raw``, and no path the move makes at or beneath
    ``to``, matches a deny-read pattern (``_check_move``): renaming a folder must not give the
    secrets in it readable names (``secrets/`` to ``public/``, ``~/.aws`` to ``aws``), nor a
    readable file a secret one."""
    source, target = _own_name(ctx, raw), _own_name(ctx, to)
    with ctx.sandbox.parent(source) as (src_fd, src_name):
        os.lstat(src_name, dir_fd=src_fd)
        if ctx.secret_policy is not None:
            _check_move(ctx, ctx.secret_policy, source, target, _beneath(src_fd, src_name, raw))
        with ctx.sandbox.parent(target) as (dst_fd, dst_name):
            try:
                os.lstat(dst_name, dir_fd=dst_fd)
            except FileNotFoundError:
                os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                return ctx.display(target)
    raise FileExistsError(f"{to} exists")


def _check_move(
    ctx: ToolContext,
    policy: SecretPolicy,
    source: Path,
    target: Path,
    names: list[tuple[str, ...]],
) -> None:
    """Refuse (SandboxError) the move of ``source`` to ``target`` when one of ``names`` (paths
    relative to both) matches a deny-read pattern on either side."""
    for rel in names:
        for side in (source.joinpath(*rel), target.joinpath(*rel)):
            shown = ctx.display(side)
            pattern = policy.match(side, shown)
            if pattern is not None:
                raise SandboxError(
                    f"refused: the move would take {shown} out of or into the secret "
                    f"pattern {pattern!r} of deny_read; such paths are not moved",
                    hint="move only files and folders that no deny_read pattern names",
                )


def _beneath(dir_fd: int, name: str, raw: str) -> list[tuple[str, ...]]:
    """The paths, relative to ``name`` in ``dir_fd``, of ``name`` itself and of everything
    beneath it when it is a folder: every name, ``.git`` included. Each folder is opened from
    its parent's descriptor with ``O_NOFOLLOW``, so no symlink is followed. A folder that
    cannot be listed, or more than ``MAX_MOVED`` entries, refuses the move (SandboxError):
    what is not seen cannot be checked."""
    found: list[tuple[str, ...]] = [()]
    if not stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode):
        return found
    stack: list[tuple[int, tuple[str, ...], Iterator[tuple[str, bool]]]] = []
    try:
        stack.append(_opened(dir_fd, name, (), raw))
        while stack:
            fd, rel, names = stack[-1]
            entry = next(names, None)
            if entry is None:
                os.close(stack.pop()[0])
                continue
            found.append((*rel, entry[0]))
            if len(found) > MAX_MOVED:
                raise SandboxError(
                    f"refused: {raw} holds more than {MAX_MOVED} entries, too many to check "
                    "against deny_read before a move",
                    hint="move its contents in smaller parts",
                )
            if entry[1]:
                stack.append(_opened(fd, entry[0], (*rel, entry[0]), raw))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return found


def _opened(
    dir_fd: int, name: str, rel: tuple[str, ...], raw: str
) -> tuple[int, tuple[str, ...], Iterator[tuple[str, bool]]]:
    """The folder ``name`` of ``dir_fd`` opened (not through a symlink) and listed: its
    descriptor, its path ``rel`` and its entries' names with whether each is a folder (one
    more than ``MAX_MOVED`` at most, enough to refuse)."""
    try:
        fd = os.open(name, LIST_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        raise _unlisted(raw, rel, err) from None
    try:
        with os.scandir(fd) as entries:
            listed = [
                (e.name, e.is_dir(follow_symlinks=False))
                for e in itertools.islice(entries, MAX_MOVED + 1)
            ]
    except OSError as err:
        os.close(fd)
        raise _unlisted(raw, rel, err) from None
    return fd, rel, iter(sorted(listed))


def _unlisted(raw: str, rel: tuple[str, ...], err: OSError) -> SandboxError:
    where = "/".join((raw.rstrip("/"), *rel))
    return SandboxError(
        f"refused: {where} cannot be listed ({err.strerror or err}), so the move cannot be "
        "checked against deny_read",
        hint="make the folder readable, or move what it holds one by one",
    )
