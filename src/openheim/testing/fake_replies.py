"""The script of a ``FakeLLMServer``: scripted replies, and the requests it recorded.

A reply describes what the model "says" (text, reasoning, tool calls) and how the server behaves
while saying it (HTTP errors, slow or cut streams, errors mid-stream), independently of the wire
format that renders it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

DEFAULT_USAGE: Mapping[str, int] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call in a ``FakeReply``.

    ``arguments`` is a JSON object, or a raw string sent verbatim (to test broken arguments).
    ``id=None`` lets the server make one up; ``id=""`` sends the call without an id.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer to one chat-completions request.

    Streamed (when the request asks for it) as: a role chunk, ``reasoning`` pieces, text pieces
    (``chunks``, or ``text`` split into words), each tool call's id/name chunk followed by its
    arguments in fragments, a finish chunk, a usage chunk (when the request asks for usage),
    then ``[DONE]``. The fault fields count those ``data:`` events; in a non-streamed answer
    ``hang_at`` and ``cut_stream_after`` hang or drop the connection before the response.
    """

    text: str = ""
    chunks: Sequence[str] | None = None
    """Stream the text in exactly these pieces; their concatenation is the text."""
    reasoning: str = ""
    """Thinking text: ``reasoning_content`` in the OpenAI format (as vLLM, DeepSeek and
    llama.cpp send it), a thinking block in Anthropic's, a thought part in Gemini's."""
    thinking_signature: str | None = None
    """The opaque signature sent with the thinking (Anthropic ``signature_delta``, Gemini
    ``thoughtSignature``); formats without one ignore it."""
    redacted_thinking: Sequence[str] = ()
    """Encrypted thinking blocks (Anthropic ``redacted_thinking`` data); others ignore it."""
    tool_calls: Sequence[FakeToolCall] = ()
    finish_reason: str | None = None
    """Defaults to ``tool_calls`` when there are tool calls, else ``stop``."""
    usage: Mapping[str, Any] | None = None
    """The raw ``usage`` object; ``DEFAULT_USAGE`` when None."""
    status: int = 200
    """An error status (>= 400) answers with a JSON ``error_body`` instead of the reply."""
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | str | None = None
    """Sent as the ``Retry-After`` header: seconds, or an HTTP date string."""
    error_body: Mapping[str, Any] | str | None = None
    """The body of an error status; a string becomes ``{"error": {"message": ...}}``."""
    error_event: Mapping[str, Any] | str | None = None
    """Sent as ``{"error": ...}`` after the text and tool chunks, instead of finish and [DONE]."""
    cut_stream_after: int | None = None
    """Drop the connection after this many events, before ``[DONE]`` (a crashed server)."""
    hang_at: int | None = None
    """Stop sending after this many events until the server closes (a stalled server)."""
    chunk_delay: float = 0.0
    """Seconds between events, on the stream's own clock: event ``k`` is due ``k + 1`` delays
    after the stream begins (a slow server)."""
    repeat_tool_ids: bool = False
    """Repeat the call id and name in every arguments fragment, as some servers do."""
    stream: bool | None = None
    """Force a streamed (True) or a plain JSON (False) answer whatever the request asked."""
    raw_events: Sequence[str | Mapping[str, Any]] | None = None
    """Send exactly these ``data:`` payloads (mappings as JSON) instead of rendering the reply;
    nothing is added, so include ``"[DONE]"`` if the stream should end properly."""

    @property
    def text_pieces(self) -> list[str]:
        """The text as streamed: ``chunks`` if given, else ``text`` split after whitespace."""
        if self.chunks is not None:
            return list(self.chunks)
        return split_words(self.text)

    @property
    def full_text(self) -> str:
        return "".join(self.chunks) if self.chunks is not None else self.text

    @property
    def finish(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def error_json(self) -> dict[str, Any]:
        """The body of an error-status answer."""
        if isinstance(self.error_body, Mapping):
            return dict(self.error_body)
        message = self.error_body or f"fake server error (HTTP {self.status})"
        return {"error": {"message": message, "type": "fake_error", "code": self.status}}


def split_words(text: str) -> list[str]:
    """``text`` in word-sized pieces (each keeps its trailing whitespace); joins back exactly."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


def split_fragments(text: str, parts: int = 3) -> list[str]:
    """``text`` in up to ``parts`` pieces of about equal size (at least one, maybe empty)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received. Header names are lower case."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    """The parsed JSON body, or None when the body was empty or not JSON."""
    raw_body: bytes = b""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request (empty when it had none)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return [m for m in self.body["messages"] if isinstance(m, dict)]
        return []

    @property
    def wants_stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def last_tool_result(self) -> str | None:
        """The content of the last message if it is a ``tool`` message (the model's turn after
        a tool ran), else None.

        In the Anthropic format the result is the last ``tool_result`` block of the last user
        message; a failed one (``is_error``) reads ``"Error: ..."``, as OpenAI's text says it.
        """
        messages = self.messages
        if not messages:
            return None
        if messages[-1].get("role") == "user":
            return _anthropic_tool_result(messages[-1].get("content"))
        if messages[-1].get("role") != "tool":
            return None
        return _text_of(messages[-1].get("content"))


def _text_of(content: Any) -> str:
    """A message or tool result content as text: a string, or the text of its parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _anthropic_tool_result(content: Any) -> str | None:
    results = [
        block
        for block in (content if isinstance(content, list) else ())
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    if not results:
        return None
    text = _text_of(results[-1].get("content"))
    return "Error: " + text if results[-1].get("is_error") else text


Responder: TypeAlias = Callable[[RecordedRequest], "FakeReply | str"]
"""A reply computed from the request; a ``str`` is shorthand for ``FakeReply(text=...)``."""

Step: TypeAlias = "FakeReply | str | Responder"
