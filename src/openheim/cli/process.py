"""The ``openheim`` program's process: garbage collection while it starts, and its exit.

A command such as ``openheim run`` lives a fraction of a second, most of it importing modules
and building objects that live until the process ends. So, only where ``cli.main`` runs as the
program (never when a caller passes it arguments):

- ``collecting_later``: garbage collection is off while start-up imports and builds (a
  collection then finds nothing to free); ``started`` freezes what start-up made out of the
  collector's sight and turns it back on before the command runs.
- ``lenient_streams``: output never fails on text it cannot encode.
- ``install_hooks``: the start-up hooks of ``openheim.process.codecache`` (``dataclasses`` compiles
  openheim's methods through a cache) and ``openheim.process.httpx_cli`` (httpx's own command line
  loads
  only when used), each unless its environment switch turns it off. They change modules that
  are not openheim's, so the program installs them for itself: ``import openheim`` does not.
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
from collections.abc import Iterator, Mapping
from typing import NoReturn

from openheim.errors import ConfigError

HOOK_SWITCHES = ("OPENHEIM_NO_CODE_CACHE", "OPENHEIM_NO_HTTPX_CLI_DEFER")
"""The environment variables that turn off ``install_hooks``' hooks, in its order."""
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


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


def install_hooks(env: Mapping[str, str]) -> None:
    """Install the code cache and the deferred httpx command line, each unless its switch in
    ``env`` (``HOOK_SWITCHES``) is true; a ConfigError, before anything is installed, for a
    switch that is not a boolean."""
    off = [_switched_off(env, name) for name in HOOK_SWITCHES]
    from openheim.process import codecache, httpx_cli

    for hook, skip in zip((codecache.install, httpx_cli.defer), off, strict=True):
        if not skip:
            hook()


def _switched_off(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name)
    value = "" if raw is None else raw.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise ConfigError(f"{name}={raw!r} is not a boolean", hint=f"set {name} to 1 or 0")


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
