"""The library API: ``Runtime`` (alias ``OpenheimClient``) opens ``AgentSession``s whose
``prompt()`` is an async iterator of events and an awaitable ``PromptResult``."""

from openheim.runtime import AgentSession, ApprovalCallback, PromptResult, PromptRun, Runtime

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
