"""Anthropic Messages: kind ``anthropic``.

A call POSTs ``{api_base}/messages`` with ``stream: true`` and reads Server-Sent Events with
``providers.sse``. The stream is a sequence of content blocks, each opened, filled by deltas and
closed, keyed by ``index``: text (``text_delta``), thinking (``thinking_delta``, then one
``signature_delta``), redacted thinking (its encrypted ``data`` arrives whole) and tool calls
(``input_json_delta`` fragments of the arguments). ``message_delta`` carries the stop reason and
the final output count; ``message_stop`` ends the stream, and a stream that ends without it was
cut. An ``error`` event mid-stream is mapped to the HTTP status its type stands for, so an
``overloaded_error`` is retried like a 529. The request conversion lives in ``anthropic_wire``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from openheim.errors import ProviderProtocolError
from openheim.events import TextDelta, ThinkingDelta
from openheim.formats import safejson
from openheim.messages import ContentBlock, Message, TextBlock, ThinkingBlock, ToolUseBlock
from openheim.providers.anthropic_wire import (
    API_VERSION,
    FINISH,
    encode_body,
    event_error,
    parse_thinking,
    usage,
)
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.http_base import HTTPProvider
from openheim.providers.sse import EventStream


def create(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> AnthropicProvider:
    """The registry's factory for kind ``anthropic``."""
    return AnthropicProvider(settings, http_client)


class AnthropicProvider(HTTPProvider):
    """A Provider speaking Anthropic Messages to one endpoint (the key goes in ``x-api-key``)."""

    wire_name = "the Anthropic Messages API"
    example_base = "https://api.anthropic.com/v1"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(
        self, settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
    ) -> None:
        self.thinking = parse_thinking(settings)
        super().__init__(settings, http_client)
        self.url = settings.api_base.rstrip("/") + "/messages"
        self._headers["anthropic-version"] = API_VERSION

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        """Stream one message: text and thinking deltas, then one ``ModelResponse`` (the
        POST's own generator, with no level of re-yielding above it)."""
        model = request.model or self.settings.model
        body = encode_body(request, self.settings, self.thinking)
        state = _Accumulator(model, self.name)
        read = functools.partial(self._read, state=state)
        return self.post_sse(self.url, body, model, read)

    async def _read(
        self, source: EventStream, state: _Accumulator
    ) -> AsyncGenerator[StreamItem, None]:
        if not self.is_event_stream(source):
            body = await self.whole_body(source, self.url)
            for item in [*state.feed_message(body), state.response()]:
                yield item
            return
        async with aclosing(source.events()) as events:
            async for event in events:
                data = event.data.strip()
                if not data:
                    continue
                payload = self.decode(data, self.url)
                name = event.event if event.event != "message" else _type_of(payload)
                for item in state.feed(name, payload):
                    yield item
                if state.done:
                    break
        if not state.done:
            raise self.stream_cut(self.url, "closed the stream before message_stop")
        yield state.response()


def _type_of(payload: Any) -> str:
    kind = payload.get("type") if isinstance(payload, dict) else None
    return kind if isinstance(kind, str) else ""


@dataclass(slots=True)
class _Block:
    """One content block being streamed; ``parts`` are its text, thinking or JSON fragments."""

    type: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""
    input: Any = None


class _Accumulator:
    """Builds the final message from stream events; blocks keep the order of their index."""

    def __init__(self, model: str, provider: str) -> None:
        self.model = model
        self.provider = provider
        self.done = False
        self.raw_finish: str | None = None
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, _Block] = {}

    def feed(self, name: str, payload: Any) -> list[StreamItem]:
        """Absorb one event; return the deltas it carries. Unknown events are ignored."""
        if not isinstance(payload, dict):
            raise self._unexpected("a JSON object per event", payload)
        if name == "content_block_delta":
            return self._delta(payload.get("index"), payload.get("delta"))
        if name == "content_block_start":
            return self._start(payload.get("index"), payload.get("content_block"))
        if name == "message_start":
            self._message_start(payload.get("message"))
        elif name == "message_delta":
            self._message_delta(payload)
        elif name == "message_stop":
            self.done = True
        elif name == "error":
            raise event_error(payload.get("error"), self.provider)
        return []

    def feed_message(self, message: Any) -> list[StreamItem]:
        """Absorb a whole (non-streamed) message as if its blocks had been streamed."""
        if not isinstance(message, dict):
            raise self._unexpected("a JSON message object", message)
        if message.get("type") == "error":
            raise event_error(message.get("error"), self.provider)
        items = self.feed("message_start", {"message": message})
        blocks = message.get("content")
        for index, block in enumerate(blocks if isinstance(blocks, list) else ()):
            items += self.feed("content_block_start", {"index": index, "content_block": block})
        self.feed("message_delta", {"delta": message, "usage": message.get("usage")})
        self.done = True
        return items

    def _unexpected(self, expected: str, got: Any) -> ProviderProtocolError:
        return ProviderProtocolError(
            f"provider {self.provider!r}: expected {expected}, got {got!r:.200}",
            hint="the server does not speak the Anthropic format; check api_base and kind",
            provider=self.provider,
        )

    def _message_start(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if isinstance(message.get("model"), str) and message["model"]:
            self.model = message["model"]
        if isinstance(message.get("usage"), dict):
            self._usage.update(message["usage"])

    def _message_delta(self, payload: Mapping[str, Any]) -> None:
        delta = payload.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self.raw_finish = delta["stop_reason"]
        if isinstance(payload.get("usage"), dict):  # counts here are cumulative
            self._usage.update({k: v for k, v in payload["usage"].items() if v is not None})

    def _start(self, index: Any, content: Any) -> list[StreamItem]:
        if not isinstance(index, int) or not isinstance(content, dict):
            return []
        block = _Block(type=str(content.get("type", "")))
        self._blocks[index] = block
        if block.type == "tool_use":
            block.id, block.name = str(content.get("id", "")), str(content.get("name", ""))
            block.input = content.get("input")
        elif block.type == "redacted_thinking":
            block.signature = str(content.get("data", ""))
        elif block.type == "thinking":
            block.signature = str(content.get("signature") or "")
            return self._add(block, "thinking", content.get("thinking"))
        elif block.type == "text":
            return self._add(block, "text", content.get("text"))
        return []

    def _delta(self, index: Any, delta: Any) -> list[StreamItem]:
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None or not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            return self._add(block, "text", delta.get("text"))
        if kind == "thinking_delta":
            return self._add(block, "thinking", delta.get("thinking"))
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block.signature += delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block.parts.append(delta["partial_json"])
        return []

    @staticmethod
    def _add(block: _Block, kind: str, text: Any) -> list[StreamItem]:
        if not isinstance(text, str) or not text:
            return []
        block.parts.append(text)
        return [TextDelta(text) if kind == "text" else ThinkingDelta(text)]

    def response(self) -> ModelResponse:
        """The complete assistant message, its blocks in stream order."""
        blocks = [
            converted
            for _, block in sorted(self._blocks.items())
            if (converted := _content(block)) is not None
        ]
        finish = FINISH.get(self.raw_finish or "", "end_turn")
        message = Message("assistant", tuple(blocks))
        return ModelResponse(message, finish, usage(self._usage), self.model, self.raw_finish)


def _content(block: _Block) -> ContentBlock | None:
    text = "".join(block.parts)
    if block.type == "text":
        return TextBlock(text) if text else None
    if block.type == "thinking":
        return ThinkingBlock(text, block.signature or None)
    if block.type == "redacted_thinking":
        return ThinkingBlock("", block.signature, redacted=True)
    if block.type == "tool_use":
        return _tool_use(block, text)
    return None  # server tool blocks and future types: nothing the loop can act on


def _tool_use(block: _Block, text: str) -> ToolUseBlock:
    if not text.strip():
        arguments = block.input if isinstance(block.input, dict) else {}
        return ToolUseBlock(block.id, block.name, arguments)
    try:
        parsed = safejson.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolUseBlock(block.id, block.name, parsed)
    return ToolUseBlock(block.id, block.name, {}, raw_arguments=text)
