"""``Elsewhere``: the prompts an ACP connection does not run itself but may cancel.

Over ``/acp`` of ``openheim serve``, a session an editor loaded may have a prompt running in
another client of the server (a ``/ws`` client) or on another replica sharing the store. The
server hands the connection an ``Elsewhere`` so that the editor's ``session/cancel`` reaches
that prompt as a cancel from the web page would; over stdio there is none.
"""

from __future__ import annotations

from typing import Protocol


class Elsewhere(Protocol):
    """Reaches the prompts of a session that run outside this connection."""

    def cancel(self, session_id: str) -> None:
        """Cancel the prompt of ``session_id`` wherever it runs (nothing when none does)."""
