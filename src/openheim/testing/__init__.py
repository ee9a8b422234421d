"""Test helpers for openheim and for agents built on it.

``ScriptedProvider`` plays back a script in-process; ``FakeLLMServer`` speaks the real wire format
on loopback. Both are public so users can test their own agents with them.
"""

from openheim.testing.scripted import Reply, ScriptedProvider, tool_call

__all__ = ["Reply", "ScriptedProvider", "tool_call"]
