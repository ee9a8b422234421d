"""The ``compact``, ``undo`` and ``pin`` requests of the ``/ws`` agent channel: the registry's
commands the web page offers (``runtime.commands``), run on an open session between prompts
as the chat and ACP run them, their result's fields and text the reply.

- ``compact``: ``ok`` with ``compacted`` (the ``context_compacted`` event, or null when there is
  nothing older to compact) and ``text``;
- ``undo`` (``turns``, default 1; ``force``, default false): ``ok`` with ``undone`` (what was
  restored and removed) and ``text``; a refusal is an ``error`` naming the files changed outside
  openheim;
- ``pin``: ``ok`` with ``text``.

Each is refused with ``SessionBusy`` while a prompt runs in the session.
"""

from __future__ import annotations

from typing import Any

from openheim.errors import SessionBusy
from openheim.runtime import commands
from openheim.server.frames import BadRequest
from openheim.server.live import Live

ACTIONS = tuple(spec.name for spec in commands.offered("ws"))


async def session_action(live: Live, data: dict[str, Any]) -> dict[str, Any]:
    """Do the request ``data["type"]`` (one of ``ACTIONS``) on ``live``'s session."""
    session = live.session
    assert session is not None
    if live.busy:
        raise SessionBusy(live.key, pid=0, host="this server")
    spec = commands.find(data["type"], "ws")
    assert spec is not None
    argument = _undo_argument(data) if spec.name == "undo" else ""
    done = await commands.Invocation(spec, argument).run(session)
    return {"type": "ok", **done.data, "text": done.text}


def _undo_argument(data: dict[str, Any]) -> str:
    """The request's ``turns`` and ``force`` as the command's ``N [--force]``."""
    turns = data.get("turns", 1)
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
        raise BadRequest("turns must be a whole number >= 1", "send turns as 1 or more")
    force = data.get("force", False)
    if not isinstance(force, bool):
        raise BadRequest("force must be true or false", "send force as a JSON boolean")
    return f"{turns} --force" if force else str(turns)
