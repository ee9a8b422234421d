"""The plain line REPL: a prompt, the answer streamed as ``openheim run`` prints it, and the
chat's commands. It runs when stdin or stdout is not a terminal, or with ``--no-tui``.

Ctrl-C (SIGINT) cancels the running turn and keeps the chat; at the prompt, or a second time
within ``DOUBLE_PRESS`` seconds, it ends the chat. SIGTERM ends it; the session is closed (its
lease released) either way.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Coroutine
from typing import Any, TextIO

from openheim.chat.actions import execute
from openheim.chat.history import InputHistory
from openheim.chat.session import Chat
from openheim.errors import OpenheimError
from openheim.events import Event, Finished, ToolCall, ToolResult
from openheim.runtime import commands, headless
from openheim.term import exit_codes
from openheim.term.render import TextRenderer

DOUBLE_PRESS = 2.0


class Repl:
    """A chat on line streams: ``source`` gives the typed lines, ``out`` the answers, ``err``
    the session line, notices and tool activity (with each result's text when
    ``tool_output``). ``refusals`` is the chat's resolver when no one can be asked: the
    closing lines after a prompt then say how to let the refused calls run."""

    def __init__(
        self,
        chat: Chat,
        source: int,
        out: TextIO,
        err: TextIO,
        history: InputHistory,
        *,
        tool_output: bool = False,
        refusals: headless.HeadlessRefusals | None = None,
    ) -> None:
        self.chat = chat
        self.source = source
        self._lines = LineReader(source)
        self.out = out
        self.err = err
        self.history = history
        self.verbose = True
        self._render = TextRenderer(out, err, tool_output=tool_output)
        self._refusals = refusals or headless.HeadlessRefusals()
        self._quit = asyncio.Event()
        self._turn: asyncio.Task[None] | None = None
        self._last_interrupt = 0.0
        self._code = exit_codes.OK

    async def run(self, first: str | None = None) -> int:
        """Open the session, send ``first`` if given, then read lines until EOF or ``:quit``."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._interrupt)
        loop.add_signal_handler(signal.SIGTERM, self._terminate)
        try:
            await self.chat.open()
            if first:
                await self._guarded(self._send(first))
            while not self._quit.is_set():
                line = await self._read()
                if line is None:
                    break
                await self._guarded(self._line(line))
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGTERM)
            await self.chat.close()
        return self._code

    def _terminate(self) -> None:
        """SIGTERM: end the chat (a running turn is cancelled) and exit with 143."""
        self._code = exit_codes.TERMINATED
        self._quit.set()
        if self._turn is not None:
            self._turn.cancel()

    async def _read(self) -> str | None:
        """The next typed line, or None at EOF or once the chat should end."""
        if os.isatty(self.source):
            self.out.write("> ")
            self.out.flush()
        reading = asyncio.ensure_future(self._lines.readline())
        quitting = asyncio.ensure_future(self._quit.wait())
        await asyncio.wait([reading, quitting], return_when=asyncio.FIRST_COMPLETED)
        for task in (reading, quitting):
            task.cancel()
        return reading.result() if reading.done() and not reading.cancelled() else None

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        """Run one line's work as a task Ctrl-C can cancel; an error is one line on ``err``."""
        self._turn = asyncio.ensure_future(work)
        try:
            await self._turn
        except OpenheimError as err:
            self.err.write(f"openheim: error: {err}\n")
            self.err.flush()
        except asyncio.CancelledError:
            if not self._turn.cancelled():
                raise
        finally:
            self._turn = None

    async def _line(self, line: str) -> None:
        self.history.add(line)
        parsed = commands.parse(line, "repl", self.chat.command_names())
        if isinstance(parsed, commands.Unknown):
            self._say(parsed.message())
        elif isinstance(parsed, commands.Invocation):
            await self._command(parsed)
        elif line.strip():
            await self._send(line)

    async def _command(self, command: commands.Invocation) -> None:
        if command.name == "verbose":
            self.verbose = not self.verbose
            self._say(f"tool items {'shown' if self.verbose else 'hidden'}")
            return
        outcome = await execute(self.chat, command, "repl")
        if outcome.text:
            self._say(outcome.text)
        if outcome.quit:
            self._quit.set()

    async def _send(self, text: str) -> None:
        """One prompt; its events rendered as they come, then, when calls were denied, the
        closing lines on ``err`` as ``openheim run`` prints them: how to let the refused calls
        run, and that the answer may describe work that was refused."""
        async with self.chat.prompt(text) as events:
            async for event in events:
                self._show(event)
                if isinstance(event, Finished):
                    lines = self._refusals.closing(event.denied, "openheim: ")
                    self.err.writelines(f"{line}\n" for line in lines)
                    self.err.flush()

    def _show(self, event: Event) -> None:
        if self.verbose or not isinstance(event, ToolCall | ToolResult):
            self._render(event)

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _interrupt(self) -> None:
        """Ctrl-C: cancel the running turn; at the prompt or twice in a row, end the chat."""
        now = time.monotonic()
        twice = now - self._last_interrupt < DOUBLE_PRESS
        self._last_interrupt = now
        if self._turn is not None and not twice:
            self.chat.session.cancel()
            self.err.write("\ncancelled; press Ctrl-C again within 2 s to quit\n")
            self.err.flush()
            return
        self._quit.set()
        if self._turn is not None:
            self._turn.cancel()


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


class LineReader:
    """Lines from a file descriptor, read when the event loop says it is readable (a pipe or a
    terminal), so waiting for input never blocks the loop and can be cancelled; a regular file
    is read directly."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False

    async def readline(self) -> str | None:
        """The next line without its newline; None at the end of input."""
        while b"\n" not in self._buffer and not self._eof:
            await self._fill()
        if not self._buffer:
            return None
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line.decode("utf-8", "replace")

    async def _fill(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(self.fd, _settle, ready)
        except (OSError, ValueError):  # a regular file: reading it does not block
            pass
        else:
            try:
                await ready
            finally:
                loop.remove_reader(self.fd)
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the terminal hung up
            chunk = b""
        self._eof = not chunk
        self._buffer += chunk
