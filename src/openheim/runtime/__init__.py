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
"""

from openheim.runtime.assembly import open_session
from openheim.runtime.options import SessionOptions, session_settings
from openheim.runtime.prompt_run import PromptResult, PromptRun
from openheim.runtime.runtime import ApprovalCallback, Runtime
from openheim.runtime.session import Session
from openheim.runtime.sessions import SessionHost

__all__ = [
    "ApprovalCallback",
    "PromptResult",
    "PromptRun",
    "Runtime",
    "Session",
    "SessionHost",
    "SessionOptions",
    "open_session",
    "session_settings",
]
