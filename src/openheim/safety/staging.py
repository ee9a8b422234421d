"""File staging: preview a change as a diff, then apply it with a one-time token.

``preview_write_file`` and ``preview_edit_file`` read the file, compute its new content with the
same rules as ``write_file`` / ``edit_file`` and keep it in the session's ``StagingArea`` under a
random token; nothing is written. ``apply_file_change(token)`` writes the staged content
atomically. A token proves the diff was shown to the model, not that anyone approved it, so
``StagedApplyGate`` checks an apply as a change of the staged file: it is asked about wherever
that write would be (showing the staged diff), unless a person allowed the preview call itself.

A token is used at most once and only in the area that issued it. Apply refuses it when unknown
(never issued here, already used, evicted), expired (``TOKEN_TTL``) or stale: the file's sha256,
or its absence, differs from what the preview saw, or its path now resolves elsewhere. An area
holds at most ``MAX_STAGED`` changes; the oldest is evicted first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from openheim.approval import (
    Allow,
    ApprovalGate,
    ApprovalRequest,
    Ask,
    Deny,
    LearningGate,
    Verdict,
)
from openheim.errors import ToolError
from openheim.safety.protected import protected_reason
from openheim.tools.base import Tool, ToolContext, ToolKind
from openheim.tools.builtin.files import apply_edit, read_for_edit, write_bytes
from openheim.tools.builtin.fs import kind_of, looks_binary, open_regular, read_error
from openheim.tools.decorator import tool
from openheim.tools.sandbox import PathSandbox

APPLY_TOOL_NAME = "apply_file_change"
"""The tool that writes a previewed change."""
PREVIEW_TOOL_NAMES = frozenset({"preview_write_file", "preview_edit_file"})
TOKEN_TTL = 600.0
"""Seconds a staged change stays applicable."""
MAX_STAGED = 50
"""Staged changes kept per area; staging one more evicts the oldest."""


@dataclass(frozen=True, slots=True)
class StagedChange:
    """One previewed change: where it goes, what it writes and what the file was then."""

    token: str
    path: Path
    """The sandbox-resolved target at preview time (no symlinks)."""
    shown: str
    """The path as the model sees it (relative to the work dir)."""
    content: bytes
    base_digest: str | None
    """sha256 of the file when previewed; None when it did not exist."""
    staged_at: float
    diff: str = ""
    """The unified diff the preview showed."""
    approved: bool = False
    """Whether a person allowed the preview call (so applying it needs no second question)."""


class StagingArea:
    """The staged changes of one session, in memory, keyed by token.

    Methods may be called from any thread: the registry has its own lock, and applies hold a
    second lock across the stale check and the write so two changes of one file cannot both pass
    the check against the same old content. ``clock`` (monotonic seconds) is injectable so
    tests can expire tokens without waiting.
    """

    def __init__(
        self,
        session_id: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session_id = session_id
        self._clock = clock
        self._changes: OrderedDict[str, StagedChange] = OrderedDict()
        self._approved_calls: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    def stage(
        self,
        path: Path,
        shown: str,
        content: bytes,
        base_digest: str | None,
        *,
        diff: str = "",
        approved: bool = False,
    ) -> str:
        """Keep a change and return its new token, evicting the oldest one past the limit."""
        token = f"chg_{secrets.token_hex(8)}"
        staged_at = self._clock()
        change = StagedChange(token, path, shown, content, base_digest, staged_at, diff, approved)
        with self._lock:
            self._changes[token] = change
            while len(self._changes) > MAX_STAGED:
                self._changes.popitem(last=False)
        return token

    def approve_call(self, call_id: str) -> None:
        """Note that a person allowed the preview call ``call_id``."""
        with self._lock:
            self._approved_calls[call_id] = None
            while len(self._approved_calls) > MAX_STAGED:
                self._approved_calls.popitem(last=False)

    def revoke_call(self, call_id: str) -> None:
        """Drop any note about ``call_id``: a new decision on a call with this id is due."""
        with self._lock:
            self._approved_calls.pop(call_id, None)

    def take_approval(self, call_id: str) -> bool:
        """Whether a person allowed the preview call ``call_id``; the note is used up."""
        with self._lock:
            if not call_id or call_id not in self._approved_calls:
                return False
            del self._approved_calls[call_id]
            return True

    def pending(self, token: str) -> StagedChange | None:
        """The change ``token`` stands for, if this area issued it and it is still applicable."""
        with self._lock:
            change = self._changes.get(token)
        return change if change is not None and not self._expired(change) else None

    def is_valid(self, token: str) -> bool:
        """Whether ``token`` was issued here and is neither used, evicted nor expired.

        Staleness needs the file, so it is checked only when the change is applied.
        """
        return self.pending(token) is not None

    def claim(self, token: str) -> StagedChange:
        """Take ``token``'s change out of the area (so it is used once) or say why not."""
        with self._lock:
            change = self._changes.pop(token, None)
        if change is None:
            raise ToolError(
                f"unknown change token {token!r}: it was not issued in this session, "
                "was already applied, or was evicted",
                hint="call preview_write_file or preview_edit_file to stage the change again",
            )
        if self._expired(change):
            raise ToolError(
                f"change token {token} for {change.shown} expired "
                f"(tokens last {TOKEN_TTL / 60:g} minutes)",
                hint="preview the change again and apply the new token",
            )
        return change

    def commit(self, change: StagedChange, ctx: ToolContext) -> bool:
        """Write a claimed change if its file is as previewed; whether a file was replaced."""
        with self._write_lock:
            target = ctx.sandbox.resolve(str(change.path), ctx.cwd, write=True)
            digest = file_digest(ctx.sandbox, target, change.shown)
            if target != change.path or digest != change.base_digest:
                raise ToolError(
                    f"{change.shown} changed since the preview of {change.token}",
                    hint="read the file and preview the change again",
                )
            return write_bytes(ctx.sandbox, target, change.shown, change.content)

    def _expired(self, change: StagedChange) -> bool:
        return self._clock() - change.staged_at > TOKEN_TTL


def file_digest(sandbox: PathSandbox, path: Path, shown: str) -> str | None:
    """sha256 of a regular file's bytes, or None when nothing is there."""
    try:
        with open_regular(sandbox, path) as fh:
            digest = hashlib.sha256()
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
            return digest.hexdigest()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise read_error(err, shown) from None


def _current(sandbox: PathSandbox, target: Path, shown: str) -> bytes | None:
    """The bytes a write would replace, or None for a new file."""
    try:
        with open_regular(sandbox, target) as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise read_error(err, shown) from None


def _split(text: str) -> list[str]:
    """Lines with their ``\\n`` (only ``\\n`` splits: a lone ``\\r`` stays in its line)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def unified_diff(old: bytes | None, new: bytes, shown: str) -> str:
    """A git-style diff of ``old`` (None: a new file) to ``new``, readable as text."""
    if old is not None and (looks_binary(old) or looks_binary(new)):
        return f"Binary files a/{shown} and b/{shown} differ\n"
    before = _split(old.decode("utf-8", "replace")) if old is not None else []
    after = _split(new.decode("utf-8", "replace"))
    source = f"a/{shown}" if old is not None else "/dev/null"
    lines = ["new file\n"] if old is None else []
    for line in difflib.unified_diff(before, after, source, f"b/{shown}"):
        lines.append(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n")
    return "".join(lines)


def _edited(text: str, shown: str, old: str, new: str, replace_all: bool) -> str:
    """``text`` with ``old`` replaced by ``new``, under edit_file's matching rules."""
    return apply_edit(text, shown, old, new, replace_all)[0]


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a preview stages its change, and whether a person allowed the preview call."""

    area: StagingArea
    sandbox: PathSandbox
    path: Path
    shown: str
    approved: bool


def _preview(to: _Target, old: bytes | None, new: bytes) -> str:
    """Stage ``new`` for the target and describe it: token, expiry, then the diff."""
    if old == new:
        return f"no change: {to.shown} already has this content (nothing was staged)"
    digest = hashlib.sha256(old).hexdigest() if old is not None else None
    diff = unified_diff(old, new, to.shown)
    token = to.area.stage(to.path, to.shown, new, digest, diff=diff, approved=to.approved)
    return (
        f"staged {'a new file' if old is None else 'a change to'} {to.shown} as token {token}; "
        f"nothing is written until {APPLY_TOOL_NAME} is called with this token "
        f"(valid {TOKEN_TTL / 60:g} minutes, refused if the file changes meanwhile)\n" + diff
    )


def _preview_write(to: _Target, content: str) -> str:
    if kind_of(to.sandbox, to.path) == "dir":
        raise ToolError(f"{to.shown} is a directory", hint="give the path of a file")
    return _preview(to, _current(to.sandbox, to.path, to.shown), content.encode("utf-8"))


def _preview_edit(to: _Target, old: str, new: str, replace_all: bool) -> str:
    text = read_for_edit(to.sandbox, to.path, to.shown)
    updated = _edited(text, to.shown, old, new, replace_all)
    encode = "utf-8", "surrogateescape"  # undecodable bytes round-trip unchanged
    return _preview(to, text.encode(*encode), updated.encode(*encode))


def _target(area: StagingArea, ctx: ToolContext, path: str) -> _Target:
    approved = area.take_approval(ctx.call_id)  # used up even when the path is refused
    target = ctx.path(path, write=True)
    return _Target(area, ctx.sandbox, target, ctx.display(target), approved)


def staging_tools(area: StagingArea) -> list[Tool]:
    """The preview and apply tools of one session's staging area."""

    @tool(read_only=True, kind=ToolKind.EDIT)
    async def preview_write_file(
        ctx: ToolContext,
        path: Annotated[str, "File to create or overwrite, relative to the working directory"],
        content: Annotated[str, "The complete new content of the file"],
    ) -> str:
        """Stage the complete new content of a file without writing it. Returns a unified diff
        and a token; call apply_file_change with the token to write the file. Missing folders
        are created on apply."""
        return await asyncio.to_thread(_preview_write, _target(area, ctx, path), content)

    @tool(read_only=True, kind=ToolKind.EDIT)
    async def preview_edit_file(
        ctx: ToolContext,
        path: Annotated[str, "File to edit, relative to the working directory"],
        old_string: Annotated[str, "Exact text to replace; must occur once unless replace_all"],
        new_string: Annotated[str, "Text to put in its place (must differ from old_string)"],
        replace_all: Annotated[bool, "Replace every occurrence instead of exactly one"] = False,
    ) -> str:
        """Stage an exact text replacement in a file without writing it, under edit_file's
        rules (old_string must match character for character and occur once unless
        replace_all). Returns a unified diff and a token for apply_file_change."""
        if not old_string:
            raise ToolError("old_string is empty", hint="use preview_write_file for whole files")
        if old_string == new_string:
            raise ToolError(
                "old_string and new_string are identical", hint="put the changed text in new_string"
            )
        to = _target(area, ctx, path)
        return await asyncio.to_thread(_preview_edit, to, old_string, new_string, replace_all)

    @tool(name=APPLY_TOOL_NAME, kind=ToolKind.EDIT)
    async def apply_file_change(
        ctx: ToolContext,
        token: Annotated[str, "The token returned by preview_write_file or preview_edit_file"],
    ) -> str:
        """Write a change staged by preview_write_file or preview_edit_file, atomically. Each
        token works once, in this session, for 10 minutes, and only while the file is still as
        it was at the preview."""
        change = area.claim(token)
        await ctx.before_write(change.path)
        replaced = await asyncio.to_thread(area.commit, change, ctx)
        await ctx.written(change.path)
        verb = "replaced" if replaced else "created"
        return f"applied {token}: wrote {len(change.content)} bytes to {change.shown} ({verb})"

    return [preview_write_file, preview_edit_file, apply_file_change]


class StagedApplyGate:
    """Wraps a gate so that applying a staged change passes it as a change of the staged file.

    A token proves the diff was shown to the model, not that anyone approved it. So the inner
    gate checks ``apply_file_change`` with the staged file as its ``path``: deny and allow
    rules, protected paths and the mode decide as for ``write_file``. Where the inner gate asks,
    the apply runs without a second question only when a person allowed the preview call
    itself (``answered``) and the file is not protected; otherwise the question carries the
    staged diff, and where no one can be asked the apply is refused.
    """

    def __init__(self, inner: ApprovalGate, area: StagingArea) -> None:
        self.inner = inner
        self.area = area

    async def check(self, request: ApprovalRequest) -> Verdict:
        if request.tool in PREVIEW_TOOL_NAMES:
            self.area.revoke_call(request.tool_call_id)  # a fresh decision is due
        token = request.arguments.get("token")
        change = self.area.pending(token) if isinstance(token, str) else None
        if request.tool != APPLY_TOOL_NAME or change is None:
            return await self.inner.check(request)
        arguments = {"token": change.token, "path": str(change.path)}
        verdict = await self.inner.check(dataclasses.replace(request, arguments=arguments))
        if not isinstance(verdict, Ask):
            return verdict
        if change.approved and protected_reason(change.shown) is None:
            return Allow()
        detail = f"the change previewed as {change.token}:\n{change.diff}"
        return dataclasses.replace(verdict, detail=detail)

    def answered(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
        """A person allowed a preview call: its staged change is approved with it."""
        if request.tool in PREVIEW_TOOL_NAMES and isinstance(answer, Allow):
            self.area.approve_call(request.tool_call_id)

    def learn(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
        if isinstance(self.inner, LearningGate):
            self.inner.learn(request, answer)
