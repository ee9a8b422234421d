"""The ``compact``, ``undo`` and ``pin`` requests of the ``/ws`` agent channel: they act on an
open session between prompts through the runtime's ``Session`` (``compact()``, ``undo()``,
``runtime.compaction.pin_prompt``), as the chat and ACP commands do, and reply with the result.

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
from openheim.events import compaction_line, event_to_dict
from openheim.runtime.compaction import pin_prompt, pinned_line
from openheim.secrets import redact_data
from openheim.server.frames import BadRequest
from openheim.server.hub import Live

ACTIONS = ("compact", "undo", "pin")


async def session_action(live: Live, data: dict[str, Any]) -> dict[str, Any]:
    """Do the request ``data["type"]`` (one of ``ACTIONS``) on ``live``'s session."""
    session = live.session
    assert session is not None
    if live.busy:
        raise SessionBusy(live.key, pid=0, host="this server")
    kind = data["type"]
    if kind == "pin":
        return {"type": "ok", "text": pinned_line(pin_prompt(session))}
    if kind == "compact":
        done = await session.compact()
        if done is None:
            return {"type": "ok", "compacted": None, "text": "nothing to compact yet"}
        shown = redact_data(event_to_dict(done))
        return {"type": "ok", "compacted": shown, "text": compaction_line(done)}
    turns, force = _undo_fields(data)
    report = await session.undo(turns, force=force)
    undone = {
        "turns": report.turns,
        "restored": list(report.restored),
        "removed": list(report.removed),
        "shell_changed": list(report.shell_changed),
    }
    return {"type": "ok", "undone": undone, "text": report.summary()}


def _undo_fields(data: dict[str, Any]) -> tuple[int, bool]:
    turns = data.get("turns", 1)
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
        raise BadRequest("turns must be a whole number >= 1", "send turns as 1 or more")
    force = data.get("force", False)
    if not isinstance(force, bool):
        raise BadRequest("force must be true or false", "send force as a JSON boolean")
    return turns, force
