"""Test helpers for openheim and for agents built on it.

``ScriptedProvider`` plays back a script in-process; ``FakeLLMServer`` speaks the real wire format
on loopback. Both are public so users can test their own agents with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openheim.testing.scripted import Reply, ScriptedProvider, tool_call

if TYPE_CHECKING:
    from openheim.testing.fake_replies import FakeReply as FakeReply
    from openheim.testing.fake_replies import FakeToolCall as FakeToolCall
    from openheim.testing.fake_replies import RecordedRequest as RecordedRequest
    from openheim.testing.fake_server import FakeLLMServer as FakeLLMServer

# The fake server loads on first use: ``python -m openheim.testing.fake_server`` must not find
# its module already imported by this package (runpy warns and runs it twice), and tests that
# only use ScriptedProvider need no HTTP server.
_LAZY = {
    "FakeLLMServer": "openheim.testing.fake_server",
    "FakeReply": "openheim.testing.fake_replies",
    "FakeToolCall": "openheim.testing.fake_replies",
    "RecordedRequest": "openheim.testing.fake_replies",
}

__all__ = ["Reply", "ScriptedProvider", "tool_call", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openheim.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
