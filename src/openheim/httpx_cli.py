"""httpx without its command-line client until that client is used.

Importing the ``httpx`` package imports ``httpx._main``, its ``httpx`` command, whenever click,
rich and pygments are installed (the ``tui`` extra brings rich): about 40 ms more for every
``openheim run``, though openheim never runs that command. ``defer()`` puts a stand-in module in
its place before httpx is first imported. The stand-in's ``main`` and every other name it is
asked for load the real module then, so ``httpx.main()`` still works as before.
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
    """Put the stand-in in place, unless httpx or its command is already imported."""
    if "httpx" in sys.modules or NAME in sys.modules:
        return
    stand_in = types.ModuleType(NAME, "httpx's command line, loaded on first use.")
    stand_in.__spec__ = importlib.machinery.ModuleSpec(NAME, None)
    stand_in.__dict__.update(main=_main, __getattr__=_attribute)
    sys.modules[NAME] = stand_in


def _real() -> types.ModuleType:
    """The real ``httpx._main``, imported now in place of the stand-in."""
    current = sys.modules.get(NAME)
    if current is not None and current.__dict__.get("main") is _main:
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
