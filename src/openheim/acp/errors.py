"""Openheim errors as JSON-RPC errors with the protocol's codes and a structured ``data``."""

from __future__ import annotations

import os
import socket

from acp import RequestError

from openheim.errors import OpenheimError, SessionBusy, SessionNotFound
from openheim.redaction.secrets import redact

NOT_FOUND = -32002
INVALID_REQUEST = -32600


def request_error(err: OpenheimError) -> RequestError:
    """The JSON-RPC error for ``err``: not found, busy, invalid params or internal."""
    data: dict[str, object] = {"reason": redact(err.message)}
    if err.hint:
        data["hint"] = err.hint
    if isinstance(err, SessionNotFound):
        return RequestError(NOT_FOUND, "Session not found", {**data, "sessionId": err.session_id})
    if isinstance(err, SessionBusy):
        return _busy(err)
    if err.usage_error:
        return RequestError.invalid_params(data)
    return RequestError.internal_error({**data, "error": type(err).__name__})


def busy(session_id: str) -> RequestError:
    """A prompt is already running in this session, in this process."""
    return _busy(SessionBusy(session_id, pid=os.getpid(), host=socket.gethostname()))


def _busy(err: SessionBusy) -> RequestError:
    return RequestError(
        INVALID_REQUEST,
        "Session busy",
        {
            "reason": "session_busy",
            "sessionId": err.session_id,
            "pid": err.pid,
            "host": err.host,
            "hint": "wait for the running prompt to end, or send session/cancel",
        },
    )
