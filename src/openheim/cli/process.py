"""The ``openheim`` program's process: garbage collection while it starts, and its exit.

A command such as ``openheim run`` lives a fraction of a second, most of it importing modules
and building objects that live until the process ends. So, only where ``cli.main`` runs as the
program (never when a caller passes it arguments):

- ``collecting_later``: garbage collection is off while start-up imports and builds (a
  collection then finds nothing to free); ``started`` freezes what start-up made out of the
  collector's sight and turns it back on before the command runs.
- ``lenient_streams``: output never fails on text it cannot encode.
- ``exit_now``: once the command is done, the exit hooks run and the standard streams are
  flushed as at any exit, then the process ends without the interpreter's teardown, which
  would free every object and module one by one (some 20 ms of every ``openheim run``) for
  nothing anyone can observe. Where that is not so (another thread still runs, a stream cannot
  be flushed), the interpreter exits as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn


@contextlib.contextmanager
def collecting_later() -> Iterator[None]:
    """Garbage collection off until ``started``; what is alive at the end is frozen, so a
    usual exit's final collections have nothing to walk."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()


def lenient_streams() -> None:
    """Standard output and error write a character they cannot encode (a lone surrogate in a
    model's answer) as a replacement mark instead of ending the command with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def started() -> None:
    """Start-up is over: freeze what it made, and collect again from here on."""
    gc.freeze()
    gc.enable()


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``: exit hooks, flushed streams, then no teardown (see the
    module docstring); the usual ``sys.exit`` where another thread is alive."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the interpreter reports it
        sys.exit(code)
    os._exit(code)
