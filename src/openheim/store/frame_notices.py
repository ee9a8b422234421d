"""The payloads of ``NOTIFY`` on the frames channel: which sessions a batch of frames stored.

One batch of frames (the server's ``FrameWriter`` stores the frames of every streaming
session together) sends as few notices as fit: each lists ``"<seq> <session id>"`` lines, the
highest number stored per session, up to ``MAX_PAYLOAD`` bytes (PostgreSQL takes 8000). So a
replica listening hears of a batch once, not once per session in it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

MAX_PAYLOAD = 7000
"""Bytes of one notice at most."""


def payloads(last: Mapping[str, int]) -> list[str]:
    """The notices for a batch whose highest number per session is ``last``."""
    out: list[str] = []
    lines: list[str] = []
    size = 0
    for session_id, seq in last.items():
        line = f"{seq} {session_id}"
        if lines and size + len(line) + 1 > MAX_PAYLOAD:
            out.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    if lines:
        out.append("\n".join(lines))
    return out


def stored(payload: str) -> Iterator[tuple[str, int]]:
    """``(session id, highest number)`` of each line of a notice (``ValueError`` if malformed)."""
    for line in payload.splitlines():
        seq, _, session_id = line.partition(" ")
        if not session_id:
            raise ValueError(f"a frames notice line without a session: {line[:80]!r}")
        yield session_id, int(seq)
