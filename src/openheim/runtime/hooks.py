"""Hooks: the user's commands run at points of a session (``[hooks]`` in config).

Each hook is ``/bin/sh -c COMMAND`` in the work dir, started by ``openheim.spawn`` (own process
group, killed with it on a timeout or a cancel) with the scrubbed child environment
(``child_env``) plus ``OPENHEIM_HOOK_*`` variables, and the event's JSON payload on stdin. Its
reply is its exit status and, optionally, one JSON object on stdout:

- exit 0 with nothing on stdout: no objection;
- exit 0 with ``{"decision": ..., "reason": ..., "prompt": ...}``: a decision (``pre_tool``:
  ``allow``, ``deny`` or ``ask``; ``user_prompt``: ``block``) or a rewritten prompt;
- exit 2 (``pre_tool`` and ``user_prompt``): deny or block, with stderr as the reason;
- anything else (another exit status, stdout that is not a JSON object, a timeout, more than
  ``MAX_OUTPUT`` bytes on stdout or stderr, a command that cannot start) is a failing hook: a
  warning, and the session goes on as if it had none, except for a ``required`` ``pre_tool``
  hook, whose failure denies the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openheim import spawn
from openheim.config.schema import HookEntry
from openheim.events import Notice
from openheim.secrets import redact

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0
DECISIONS: dict[str, frozenset[str]] = {
    "pre_tool": frozenset({"allow", "deny", "ask"}),
    "user_prompt": frozenset({"block"}),
}
"""The events whose reply may decide something, and the decisions each takes."""
REFUSING = {"pre_tool": "deny", "user_prompt": "block"}
"""The decision that exit status 2 stands for."""
MAX_REASON = 2000
MAX_OUTPUT = 1024 * 1024
MAX_ENV_VALUE = 4096
"""The most a hook may write to stdout or to stderr; past it, it is killed (a failure)."""


@dataclass(frozen=True)
class HookReply:
    """What a hook answered: a decision and its reason, a rewritten prompt, or a failure."""

    decision: str | None = None
    reason: str = ""
    prompt: str | None = None
    problem: str | None = None
    """Why the hook failed (None when it did not)."""


@dataclass
class Hooks:
    """A session's hooks: the configured entries and what each run is given."""

    entries: Mapping[str, HookEntry]
    cwd: Path
    env: Mapping[str, str]
    session_id: str | None = None
    warnings: list[Notice] = field(default_factory=list)
    """Hook failures not told yet (the session's events take them)."""

    def has(self, event: str) -> bool:
        return event in self.entries

    def entry(self, event: str) -> HookEntry | None:
        return self.entries.get(event)

    def drain(self) -> list[Notice]:
        """The warnings not told yet, once."""
        told, self.warnings = self.warnings, []
        return told

    async def run(self, event: str, **payload: Any) -> HookReply | None:
        """Run the ``event`` hook with ``payload``; None when none is configured. A failure is
        also kept as a warning."""
        entry = self.entries.get(event)
        if entry is None:
            return None
        body = {"event": event, "session_id": self.session_id, "cwd": str(self.cwd), **payload}
        reply = await _run(entry, event, body, self._env(event, payload))
        if reply.problem is not None:
            line = f"the {event} hook failed: {reply.problem}"
            log.warning("%s", redact(line))
            self.warnings.append(Notice(redact(line), "warning", "loop"))
        return reply

    def _env(self, event: str, payload: Mapping[str, Any]) -> dict[str, str]:
        env = dict(self.env)
        env["OPENHEIM_HOOK_EVENT"] = event
        env["OPENHEIM_HOOK_SESSION_ID"] = self.session_id or ""
        env["OPENHEIM_HOOK_CWD"] = str(self.cwd)
        for key in ("tool", "path"):
            if isinstance(payload.get(key), str):
                env[f"OPENHEIM_HOOK_{key.upper()}"] = env_value(payload[key])
        return env


def env_value(value: str) -> str:
    """``value`` when an environment variable can hold it as it is (no NUL byte, encodable, at
    most ``MAX_ENV_VALUE`` bytes), else ``""``: a name the model made up can then neither crash
    the hook's start nor keep it from starting. The payload on stdin always has it whole."""
    try:
        data = os.fsencode(value)
    except UnicodeEncodeError:
        return ""
    return value if b"\0" not in data and len(data) <= MAX_ENV_VALUE else ""


async def _run(
    entry: HookEntry, event: str, body: Mapping[str, Any], env: Mapping[str, str]
) -> HookReply:
    timeout = entry.timeout or DEFAULT_TIMEOUT
    # ASCII with escapes: a lone surrogate from the model is still valid JSON, never an error
    data = json.dumps(body, default=str).encode("ascii")
    try:
        proc = await spawn.exec_async(
            ["/bin/sh", "-c", entry.command],
            env=env,
            cwd=env.get("OPENHEIM_HOOK_CWD") or None,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as failed:
        return HookReply(problem=f"it could not start: {failed.strerror or failed}")
    try:
        out, err = await asyncio.wait_for(_exchange(proc, data), timeout)
    except TimeoutError:
        return HookReply(problem=f"it did not finish within {timeout:g} s and was killed")
    except _TooMuch:
        return HookReply(problem=f"it wrote more than {MAX_OUTPUT} bytes and was killed")
    finally:
        _kill_group(proc.pid)  # also whatever it left running in the background
        _close_pipes(proc)
        if proc.returncode is None:
            await proc.wait()
    return parse_reply(event, proc.returncode or 0, out, err)


class _TooMuch(Exception):
    """A hook wrote more than ``MAX_OUTPUT`` bytes to stdout or stderr."""


async def _exchange(proc: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """Feed ``data`` to the hook's stdin while reading its stdout and stderr (each bounded by
    ``MAX_OUTPUT``), then wait for it to exit; its stdout and stderr."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    tasks = [
        asyncio.ensure_future(_collect(proc.stdout)),
        asyncio.ensure_future(_collect(proc.stderr)),
        asyncio.ensure_future(_feed(proc.stdin, data)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # raises _TooMuch
        await proc.wait()
        out, err = tasks[0].result(), tasks[1].result()
        assert out is not None and err is not None
        return out, err
    finally:
        for task in tasks:
            task.cancel()


async def _collect(stream: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(65536):
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise _TooMuch
        chunks.append(chunk)
    return b"".join(chunks)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write the payload; a hook that exits or closes stdin without reading it is no error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
        stdin.close()


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the hook's pipes. asyncio's ``wait()`` returns only once they are
    closed, and a process that left the hook's group (``setsid``) may hold them open forever,
    as may a stream we stopped reading; closing them first bounds the wait to the hook's
    death. (The transport is reached through a private name: asyncio has no public one.)"""
    transport = getattr(proc, "_transport", None)
    for fd in (0, 1, 2):
        pipe = transport.get_pipe_transport(fd) if transport is not None else None
        if pipe is not None:
            pipe.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def parse_reply(event: str, code: int, out: bytes, err: bytes) -> HookReply:
    """A hook's reply from its exit status, stdout and stderr (see the module docstring)."""
    stderr = err.decode("utf-8", "replace").strip()[:MAX_REASON]
    if code == 2 and event in REFUSING:
        return HookReply(REFUSING[event], stderr or f"the {event} hook refused")
    if code != 0:
        said = f": {stderr.splitlines()[-1]}" if stderr else ""
        return HookReply(problem=f"it exited with status {code}{said}")
    text = out.decode("utf-8", "replace").strip()
    if not text:
        return HookReply()
    try:
        reply = json.loads(text)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        return HookReply(problem="its stdout is not one JSON object (print logs to stderr)")
    decision, reason, prompt = reply.get("decision"), reply.get("reason", ""), reply.get("prompt")
    if decision is not None and decision not in DECISIONS.get(event, frozenset()):
        allowed = ", ".join(sorted(DECISIONS.get(event, ()))) or "none"
        return HookReply(problem=f"decision {decision!r} is not one of: {allowed}")
    if not isinstance(reason, str) or not (prompt is None or isinstance(prompt, str)):
        return HookReply(problem="reason and prompt must be strings")
    return HookReply(decision, reason[:MAX_REASON], prompt if event == "user_prompt" else None)
