"""The library API: ``Runtime`` (alias ``OpenheimClient``) opens ``AgentSession``s whose
``prompt()`` is an async iterator of events and an awaitable ``PromptResult``."""

from openheim.api.runtime import ApprovalCallback, Runtime
from openheim.api.session import AgentSession, PromptResult, PromptRun

OpenheimClient = Runtime
"""The name Openheim gives its library facade."""

__all__ = [
    "AgentSession",
    "ApprovalCallback",
    "OpenheimClient",
    "PromptResult",
    "PromptRun",
    "Runtime",
]
