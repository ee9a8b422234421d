"""File and terminal access through whoever drives the session.

An editor speaking the Agent Client Protocol may offer to read and write files itself (so the
agent sees unsaved buffers and the editor tracks the change) and to run commands in its own
terminals (so the user watches them live). A surface hands the tools such a ``ClientIO`` through
``ToolContext.client``; each capability is used only when the client advertised it, and the
sandbox and deny-read checks run first either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command ended and what it printed, whether it ran locally or in a client terminal.

    ``code`` is the exit status, or minus the signal number when a signal ended it. A terminal
    that merges the two streams reports everything as ``stdout``. Each stream should be bounded
    (locally: its first and last 32 KiB, with a note of what was dropped). ``timed_out`` means
    it was killed after its time limit and the output is what came before; ``lingered`` means
    background processes still holding the output were killed after the command itself ended.
    """

    code: int
    stdout: str
    stderr: str
    timed_out: bool
    lingered: bool = False


class ClientIO(Protocol):
    """What the client offers; the tools check the flags before calling a method.

    Paths handed to the methods are absolute and have passed the sandbox and deny-read checks,
    and nothing, or a regular file with one name, stood there just before the request
    (``fs.check_for_editor``). The client opens them by name itself, so a hard link or a symlink
    swapped in between that check and its open is beyond openheim's reach; the tools check
    again after it answers and report such a swap (the local file tools open through
    descriptors instead).
    """

    @property
    def reads_files(self) -> bool: ...

    @property
    def writes_files(self) -> bool: ...

    @property
    def runs_commands(self) -> bool: ...

    async def read_text_file(self, path: Path) -> str:
        """The whole text of ``path`` (absolute), as the client has it (unsaved edits included);
        raises ``ToolError`` when the client cannot read it."""
        ...

    async def write_text_file(self, path: Path, content: str) -> None:
        """Write ``content`` to ``path`` (absolute) through the client; raises ``ToolError``."""
        ...

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        call_id: str,
    ) -> CommandResult:
        """Run ``sh -c command`` in a client terminal, killed after ``time_limit`` seconds and
        on cancellation, always released; ``call_id`` is the tool call it belongs to. ``env`` is
        the environment local commands get (``child_env``): the client should start from it, so
        variables held back as secrets stay out of the terminal too."""
        ...
