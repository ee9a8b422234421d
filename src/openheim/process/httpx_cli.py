"""httpx without its command-line client until that client is used.

Importing the ``httpx`` package imports ``httpx._main``, its ``httpx`` command, whenever click,
rich and pygments are installed (the ``tui`` extra brings rich): about 40 ms more for every
``openheim run``, though openheim never runs that command. ``defer()`` puts a stand-in module in
its place when httpx first imports it (a ``sys.meta_path`` finder that answers once). The
stand-in's ``main`` and every other name it is asked for load the real module then, so
``httpx.main()`` still works as before.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

TYPE_CHECKING = False  # not typing's: this module is imported by `openheim --version` too
if TYPE_CHECKING:
    from typing import Any

NAME = "httpx._main"


def defer() -> None:
    """Let the next import of ``httpx._main`` load the stand-in, unless httpx or its command
    is already imported."""
    if "httpx" in sys.modules or NAME in sys.modules or _Finder in sys.meta_path:
        return
    sys.meta_path.insert(0, _Finder)


class _Finder:
    """A ``sys.meta_path`` finder for the stand-in: it answers once, then steps aside."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> Any:
        if name != NAME:
            return None
        sys.meta_path.remove(_Finder)
        loader: Any = _Loader  # a loader by its methods, not importlib.abc's (typing is slow)
        return importlib.machinery.ModuleSpec(NAME, loader)


class _Loader:
    """Makes the stand-in: a module whose names load the real one."""

    @staticmethod
    def create_module(spec: object) -> None:
        """The import system's default module."""

    @staticmethod
    def exec_module(module: types.ModuleType) -> None:
        module.__doc__ = "httpx's command line, loaded on first use (openheim.process.httpx_cli)."
        module.__dict__.update(main=_main, __getattr__=_attribute)


def _real() -> types.ModuleType:
    """The real ``httpx._main``, imported now in place of the stand-in."""
    current = sys.modules.get(NAME)
    if current is not None and getattr(current.__spec__, "loader", None) is _Loader:
        del sys.modules[NAME]
    return importlib.import_module(NAME)


def _main() -> Any:
    """``httpx.main``: the real command."""
    return _real().main()


def _attribute(name: str) -> Any:
    """Any other name of ``httpx._main``, from the real module; a missing dunder (``__file__``,
    asked by tools that walk ``sys.modules``) loads nothing."""
    if name.startswith("__"):
        raise AttributeError(f"module {NAME!r} has no attribute {name!r}")
    return getattr(_real(), name)
