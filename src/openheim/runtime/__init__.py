"""The runtime: sessions assembled from settings, and the ``Runtime`` that opens them.

Every surface (``openheim run``, ``openheim acp``, the library) drives the same session class
through ``Runtime``. The modules, from the bottom up:

- ``settings``: ``Settings`` from keyword arguments alone (the library's ``Runtime(...)``);
- ``history``: ``PersistentHistory``, the messages of a stored session;
- ``options``: ``SessionOptions``, which session to open, and what they choose;
- ``provider``, ``policy``, ``tools``, ``subagents``: the parts a session is made of;
- ``assembly``: ``open_session``, which assembles them into a session;
- ``prompt_run``, ``host``, ``session``: a session, its prompts, and the task that hosts it;
- ``runtime``: ``Runtime``, which holds the settings and the caller's tools and opens sessions;
- ``sessions``: ``SessionHost``, the sessions a surface keeps open across prompts.

This package's front is the runtime's one face for the surfaces: they import from it alone, the
main classes by name and the user layer as namespaces (``from openheim.runtime import
approvals`` and then ``approvals.question(...)``), so generic names (``parse``, ``answer``,
``undo``) keep their module's name beside them. The namespaces in ``_USER_LAYER`` load on first
use, so a surface pays only for the parts it touches. The other submodules (``assembly``,
``history``, ``host``, ``prompt_run``, ``store_writes``, ...) are the runtime's own.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from openheim.runtime.assembly import open_session
from openheim.runtime.options import SessionOptions, session_settings
from openheim.runtime.prompt_run import PromptResult, PromptRun
from openheim.runtime.runtime import ApprovalCallback, Runtime
from openheim.runtime.session import Session
from openheim.runtime.sessions import SessionHost

if TYPE_CHECKING:
    from openheim.runtime import (
        approvals,
        attach,
        checkpoints,
        commands,
        headless,
        models,
        policy,
        prompt_commands,
        replay,
        store_migration,
        stored_checkpoints,
        structured,
        subagents,
        titles,
        tools,
        undo,
    )

_USER_LAYER = (
    "approvals",
    "attach",
    "checkpoints",
    "commands",
    "headless",
    "models",
    "policy",
    "prompt_commands",
    "replay",
    "store_migration",
    "stored_checkpoints",
    "structured",
    "subagents",
    "titles",
    "tools",
    "undo",
)
"""The submodules surfaces use as namespaces: commands, approvals and the headless refusal,
attachments, models, titles, replay, undo and checkpoints, the store migration, policy,
structured output, subagents and tool selection."""

__all__ = [
    "ApprovalCallback",
    "PromptResult",
    "PromptRun",
    "Runtime",
    "Session",
    "SessionHost",
    "SessionOptions",
    "approvals",
    "attach",
    "checkpoints",
    "commands",
    "headless",
    "models",
    "open_session",
    "policy",
    "prompt_commands",
    "replay",
    "session_settings",
    "store_migration",
    "stored_checkpoints",
    "structured",
    "subagents",
    "titles",
    "tools",
    "undo",
]


def __getattr__(name: str) -> ModuleType:
    """A namespace of ``_USER_LAYER``, imported on first access (``openheim.runtime.commands``)."""
    if name not in _USER_LAYER:
        raise AttributeError(f"module 'openheim.runtime' has no attribute {name!r}")
    return importlib.import_module(f"openheim.runtime.{name}")
