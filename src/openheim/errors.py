"""Every error openheim raises on purpose.

Hierarchy::

    OpenheimError                  base; ``str(err)`` is one line: what is wrong, then how to fix it
    ├── ConfigError                a config file, flag or environment variable is invalid
    ├── ProviderError              a model provider failed
    │   ├── ProviderUnavailable    the endpoint cannot be reached, or timed out
    │   ├── ProviderHTTPError      the endpoint answered with an HTTP error status
    │   ├── ContextOverflow        the request is longer than the model's context window
    │   └── ProviderProtocolError  the response was not what the wire format promises
    │       └── StreamCut          the stream ended before its end marker
    ├── ToolError                  a tool call failed; the model is told, the run goes on
    │   ├── ArgumentError          tool arguments do not match the tool's schema
    │   └── SandboxError           a path leaves the work dir, or is otherwise refused
    │       └── UnusablePath       the filesystem cannot even check the path (name too long)
    ├── SessionNotFound            no stored session has that id (or the prefix matches none, or
    │                              several)
    ├── SessionBusy                another prompt holds the session's lease; names its pid, host
    ├── SessionExists              a restore or import would overwrite a stored session
    ├── InvalidExport              the text to import is not a session export this version reads
    ├── SchemaError                the session database was written by a newer openheim
    ├── StoreError                 the session store's backend failed (locked past its timeout,
    │                              disk full, unreadable file)
    ├── UndoRefused                an undo would overwrite files changed since their checkpoint
    │                              (names them), or there is nothing to undo
    └── PlatformError              a chat platform refused the gateway or could not be reached
    ScriptError                    an ``AssertionError``: a scripted test provider was driven off
                                   its script

The session store's errors are also importable from ``openheim.store`` (``InvalidExport`` and
``SchemaError`` from ``openheim.store.export`` and ``openheim.store.schema``).

Errors carry a ``hint`` (how to fix it) apart from the message so surfaces can render both.
"""

from __future__ import annotations


class OpenheimError(Exception):
    """Base class: a message saying what is wrong and an optional hint saying what to do."""

    usage_error: bool = False
    """True when the user's input is at fault (the CLI exits 2 instead of 1)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(OpenheimError):
    """Invalid configuration: a file, a key, a value, a flag or an environment variable."""

    usage_error = True


class ProviderError(OpenheimError):
    """A model provider failed; ``retryable`` says whether trying again may help."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.provider = provider
        self.retry_after = retry_after


class ProviderUnavailable(ProviderError):
    """The endpoint cannot be reached, refused the connection, or stopped sending."""

    retryable = True


class ProviderHTTPError(ProviderError):
    """The endpoint answered with an error status."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        hint: str | None = None,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, hint=hint, provider=provider, retry_after=retry_after)
        self.status = status
        self.retryable = status in RETRYABLE_STATUSES


RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})


class ContextOverflow(ProviderError):
    """The prompt does not fit the model's context window; never retried as is."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        hint: str | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, provider=provider)
        self.status = status


class ProviderProtocolError(ProviderError):
    """The response broke its wire format: not JSON, cut short, or an error event mid-stream."""


class StreamCut(ProviderProtocolError):
    """The stream stopped before its end marker (a crashed server, a proxy cut): retryable."""

    retryable = True


class ToolError(OpenheimError):
    """A tool call failed in a way the model should hear about and may recover from."""


class ArgumentError(ToolError):
    """Arguments do not match the schema; the message names the field and the problem."""


class SandboxError(ToolError):
    """A path is refused: it leaves the work dir, follows a symlink out, or dangles."""


class UnusablePath(SandboxError):
    """The filesystem cannot check the path at all (for example, a name too long)."""

    def __init__(self, raw: str, reason: str) -> None:
        super().__init__(f"path {raw!r} cannot be used: {reason}", hint="use a valid path")
        self.reason = reason


class SessionNotFound(OpenheimError):
    """No session matches the id or prefix."""

    usage_error = True

    def __init__(self, session_id: str, *, hint: str | None = None) -> None:
        super().__init__(
            f"no session {session_id!r}",
            hint=hint or "pass the id (or its first 6+ characters) of a listed session",
        )
        self.session_id = session_id


class SessionBusy(OpenheimError):
    """Another prompt is running in this session; ``pid`` and ``host`` name its process."""

    def __init__(self, session_id: str, *, pid: int, host: str) -> None:
        super().__init__(
            f"session {session_id} is busy: a prompt is running in process {pid} on {host}",
            hint="wait for that prompt to finish, or stop that process",
        )
        self.session_id = session_id
        self.pid = pid
        self.host = host


class SessionExists(OpenheimError):
    """A restore would overwrite a session with the same id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} already exists",
            hint="delete it first, or import with replace=True",
        )
        self.session_id = session_id


class InvalidExport(OpenheimError):
    """The text given to ``import_json`` is not a session export this version can read."""


class SchemaError(OpenheimError):
    """The database was written by a newer openheim than this one."""


class StoreError(OpenheimError):
    """The storage backend failed in a way the caller cannot fix by changing its request."""


class UndoRefused(OpenheimError):
    """An undo did not run: files changed outside openheim since their checkpoint (``paths``),
    or the session has no such turn. Nothing was restored or rewound."""

    def __init__(self, message: str, *, hint: str | None = None, paths: tuple[str, ...] = ()):
        super().__init__(message, hint=hint)
        self.paths = paths


class PlatformError(OpenheimError):
    """A chat platform (Telegram, Discord, WhatsApp) refused a request of the gateway, or could
    not be reached after every retry."""


class ScriptError(AssertionError):
    """A ``ScriptedProvider`` ran out of steps, or finished with steps left over."""
