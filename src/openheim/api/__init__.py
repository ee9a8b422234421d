"""The library API: ``Runtime`` (alias ``OpenheimClient``) opens ``Session``s whose ``prompt()``
is an async iterator of events and an awaitable ``PromptResult``.

``AgentSession`` is a deprecated alias of ``Session`` (it warns when imported); it will be
removed in a later release.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from openheim.runtime import ApprovalCallback, PromptResult, PromptRun, Runtime, Session

if TYPE_CHECKING:
    AgentSession = Session

OpenheimClient = Runtime
"""The name Openheim gives its library facade."""

__all__ = [
    "AgentSession",
    "ApprovalCallback",
    "OpenheimClient",
    "PromptResult",
    "PromptRun",
    "Runtime",
    "Session",
]


def __getattr__(name: str) -> Any:
    if name == "AgentSession":
        warnings.warn(
            "openheim.api.AgentSession is deprecated: use openheim.api.Session (the same class)",
            DeprecationWarning,
            stacklevel=2,
        )
        return Session
    raise AttributeError(f"module 'openheim.api' has no attribute {name!r}")
