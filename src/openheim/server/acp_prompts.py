"""``HubPrompts``: how an ``/acp`` connection reaches the prompts it does not run.

An editor on ``/acp`` runs its prompts in its own connection. A session it loaded may also
have a prompt that a ``/ws`` client started, on this replica (in the ``Hub``) or on another
one sharing the PostgreSQL store. The editor's ``session/cancel`` then cancels that prompt
the way a ``/ws`` client's ``cancel`` does (``relay.cancel``): here directly, elsewhere over
the replicas' control channel, which the replica running the prompt applies.
"""

from __future__ import annotations

from openheim.server import relay
from openheim.server.hub import Hub


class HubPrompts:
    """The ``acp.elsewhere.Elsewhere`` of one server: its hub and, through it, its relay."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def cancel(self, session_id: str) -> None:
        """Cancel the prompt of ``session_id`` that runs in the hub here or on another
        replica; nothing when none does."""
        hub = self.hub
        live = hub.get(session_id)
        if live is not None:
            relay.cancel(hub, live)
        elif hub.relay is not None and hub.store.held_elsewhere(session_id):
            relay.cancel_elsewhere(hub, session_id)
