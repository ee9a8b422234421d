"""Hooks: the user's commands run at points of a session (``[hooks]`` in config).

Each hook is ``/bin/sh -c COMMAND`` in the work dir, started and supervised by
``openheim.process.spawn``
with the scrubbed child environment (``child_env``) plus ``OPENHEIM_HOOK_*`` variables, and the
event's JSON payload on stdin. A hook ends with its whole process group: SIGKILL at its timeout,
on a cancel and once it exited (what it left running, given ``LINGER_GRACE`` first if it still
holds the hook's output), so nothing it started outlives it. Its reply is its exit status and,
optionally, one JSON object on stdout:

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openheim.config.schema import HookEntry
from openheim.events import Notice
from openheim.formats import safejson
from openheim.process import spawn
from openheim.redaction.secrets import redact

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
"""The most a hook may write to stdout or to stderr; past it, it is killed (a failure)."""
MAX_ENV_VALUE = 4096
LINGER_GRACE = 0.5
"""Seconds the hook's stdout and stderr may stay open after it exited (held by a process it
left running) before its process group is killed; the hook's reply stands."""


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
    out, err = _Bounded(), _Bounded()
    with contextlib.ExitStack() as pipes:  # our ends, closed even if a daemon holds theirs
        try:
            proc = await _start(entry.command, env, data, (out, err), pipes)
        except OSError as failed:
            return HookReply(problem=f"it could not start: {failed.strerror or failed}")
        try:
            closed = [out.closed, err.closed]
            code, timed_out, _ = await spawn.supervise(proc, closed, timeout, LINGER_GRACE)
        finally:
            spawn.kill_group(proc.pid)  # what it left running, even with its output let go
    if out.too_much or err.too_much:
        return HookReply(problem=f"it wrote more than {MAX_OUTPUT} bytes and was killed")
    if timed_out:
        return HookReply(problem=f"it did not finish within {timeout:g} s and was killed")
    return parse_reply(event, code, bytes(out.data), bytes(err.data))


async def _start(
    command: str,
    env: Mapping[str, str],
    data: bytes,
    output: tuple[_Bounded, _Bounded],
    pipes: contextlib.ExitStack,
) -> asyncio.subprocess.Process:
    """``/bin/sh -c command`` with ``data`` on its stdin and its stdout and stderr read into
    ``output``, on pipes whose ends here ``pipes`` closes."""
    with contextlib.ExitStack() as child_ends:
        stdin = await _feeding(data, pipes, child_ends)
        stdout = await spawn.read_pipe(output[0], pipes, child_ends)
        stderr = await spawn.read_pipe(output[1], pipes, child_ends)
        proc = await spawn.exec_async(
            ["/bin/sh", "-c", command],
            env=env,
            cwd=env.get("OPENHEIM_HOOK_CWD") or None,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
        )
    for bounded in output:
        bounded.watch(proc.pid)
    return proc


async def _feeding(
    data: bytes, pipes: contextlib.ExitStack, child_ends: contextlib.ExitStack
) -> int:
    """A pipe that gives ``data`` to the hook's stdin as it reads, then its end; the read end,
    for the hook. A hook that exits or closes stdin without reading it all is no error, and
    what it did not read is dropped when ``pipes`` closes."""
    read_fd, write_fd = os.pipe()
    child_ends.callback(os.close, read_fd)
    writer = os.fdopen(write_fd, "wb", buffering=0)
    try:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, writer)
    except BaseException:
        writer.close()
        raise
    transport.write(data)
    transport.close()  # once the data is written
    pipes.callback(_drop_unread, transport)
    return read_fd


def _drop_unread(transport: asyncio.WriteTransport) -> None:
    """Close a stdin pipe whose data the hook did not read all of (one it did read is closed
    already: aborting it again would close it twice)."""
    if transport.get_write_buffer_size():
        transport.abort()


class _Bounded(asyncio.Protocol):
    """One of a hook's output pipes, kept whole up to ``MAX_OUTPUT`` bytes; past that, the
    hook's process group is killed and the rest read to its end and dropped."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.too_much = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pid: int | None = None

    def watch(self, pid: int) -> None:
        """Kill ``pid``'s process group once too much came (at once if it already did)."""
        self._pid = pid
        self._stop()

    def data_received(self, data: bytes) -> None:
        if self.too_much:
            return
        if len(self.data) + len(data) > MAX_OUTPUT:
            self.too_much = True
            self.data.clear()
            self._stop()
        else:
            self.data += data

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def _stop(self) -> None:
        if self.too_much and self._pid is not None:
            spawn.kill_group(self._pid)


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
        reply = safejson.loads(text)
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
