"""How ``FakeLLMServer`` speaks one provider's wire format.

A ``WireFormat`` says which requests it answers and how a ``FakeReply`` looks in that format:
the Server-Sent Events frames of a streamed answer, the JSON of a whole one, and the body of an
error status. The server is the same for every format; fault injection (``hang_at``,
``cut_stream_after``, ``chunk_delay``, statuses, ``Retry-After``) counts frames, so it works
alike for each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openheim.testing.fake_replies import FakeReply, RecordedRequest

NewId = Callable[[], str]


@dataclass(frozen=True)
class WireFormat:
    name: str
    matches: Callable[[RecordedRequest], bool]
    """Whether this format answers the request (by method and path)."""
    wants_stream: Callable[[RecordedRequest], bool]
    stream_frames: Callable[[FakeReply, RecordedRequest, NewId], list[str]]
    """Whole SSE frames without the blank line that ends each (``data: ...`` or
    ``event: name\\ndata: ...``)."""
    completion: Callable[[FakeReply, RecordedRequest, NewId], dict[str, Any]]
    error_body: Callable[[FakeReply], dict[str, Any]]
