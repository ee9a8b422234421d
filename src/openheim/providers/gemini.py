"""Google Gemini (kind ``gemini``): the Generative Language API's ``streamGenerateContent``.

A call POSTs ``{api_base}/models/{model}:streamGenerateContent?alt=sse`` and reads Server-Sent
Events with ``providers.sse``; each ``data:`` is one ``GenerateContentResponse`` whose first
candidate holds new parts. The stream has no end marker: it is complete once a candidate has a
``finishReason`` (or the prompt was blocked). The API key travels only in the ``x-goog-api-key``
header, never in the URL, so no URL in an error or a log can leak it.

Parts keep their order in the final message. Consecutive text parts (and thought parts) join
into one block until a part carries a ``thoughtSignature``: the signature ends its block, so
every signature goes back on a part of its own kind next turn. The request side lives in
``gemini_wire``.
"""

from __future__ import annotations

import functools
import itertools
import json
import secrets
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from openheim.errors import (
    ProviderError,
    ProviderHTTPError,
)
from openheim.events import TextDelta, ThinkingDelta
from openheim.formats import safejson
from openheim.messages import (
    ContentBlock,
    FinishReason,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.gemini_wire import encode_body, thinking_config
from openheim.providers.http_base import HTTPProvider, event_object
from openheim.providers.sse import EventStream

_FINISH: dict[str, FinishReason] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}
_BAD_KEY_MARKERS = ("API_KEY_INVALID", "API key not valid")
"""Gemini answers an invalid key with 400, not 401; these say that is what happened."""


def create(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> GeminiProvider:
    """The registry's factory for kind ``gemini``."""
    return GeminiProvider(settings, http_client)


class GeminiProvider(HTTPProvider):
    """A Provider speaking the Gemini API to one endpoint (the key goes in ``x-goog-api-key``,
    never in the URL)."""

    wire_name = "the Gemini API"
    example_base = "https://generativelanguage.googleapis.com/v1beta"
    key_env = "GEMINI_API_KEY"

    def __init__(
        self, settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
    ) -> None:
        thinking_config(settings.thinking)  # a bad setting fails now, not on the first call
        super().__init__(settings, http_client)
        self._id_prefix = f"call_{secrets.token_hex(4)}_"
        self._ids = itertools.count(1)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def url(self, model: str) -> str:
        """The streaming endpoint of ``model`` (``models/`` prefix optional)."""
        name = model.removeprefix("models/")
        return f"{self.settings.api_base.rstrip('/')}/models/{name}:streamGenerateContent?alt=sse"

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        """Stream one answer: text and thinking deltas, then one ``ModelResponse`` (the
        POST's own generator, with no level of re-yielding above it)."""
        model = request.model or self.settings.model
        url = self.url(model)
        state = _Reply(model, self._new_id, self.name)
        read = functools.partial(self._read, state=state, url=url)
        return self.post_sse(url, encode_body(request, self.settings), model, read)

    def adjust_error(self, error: ProviderError, response: httpx.Response) -> None:
        """Gemini answers a bad key with 400 and puts its retry advice in the body."""
        if response.status_code == 400 and any(m in response.text for m in _BAD_KEY_MARKERS):
            error.hint = self.key_hint
        if isinstance(error, ProviderHTTPError) and error.retry_after is None:
            error.retry_after = retry_delay(response.content)

    async def _read(
        self, source: EventStream, state: _Reply, url: str
    ) -> AsyncGenerator[StreamItem, None]:
        if not self.is_event_stream(source):
            data = await self.whole_body(source, url)
            for chunk in data if isinstance(data, list) else [data]:
                for item in state.feed(chunk):
                    yield item
        else:
            async with aclosing(source.events()) as events:
                async for event in events:
                    if event.data.strip():
                        for item in state.feed(self.decode(event.data, url)):
                            yield item
        if not state.finished:
            raise self.stream_cut(url, "stopped sending before a finish reason")
        yield state.response()

    def _new_id(self) -> str:
        """An id for a function call sent without one; unique per provider, and random enough
        not to collide with the ids of an earlier session resumed on a new provider."""
        return f"{self._id_prefix}{next(self._ids)}"


def retry_delay(body: bytes) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``"retryDelay": "37s"``), if any.

    Gemini's 429 carries its advice there rather than in a ``Retry-After`` header.
    """
    try:
        data = safejson.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


@dataclass(slots=True)
class _Run:
    """Consecutive text (or thought) parts, joined into one block."""

    thinking: bool
    pieces: list[str] = field(default_factory=list)
    signature: str | None = None

    def block(self) -> ContentBlock:
        text = "".join(self.pieces)
        if self.thinking:
            return ThinkingBlock(text, self.signature)
        return TextBlock(text, self.signature)


class _Reply:
    """Builds the final message from the stream's response objects, in part order."""

    def __init__(self, model: str, new_id: Callable[[], str], provider: str) -> None:
        self.model = model
        self.provider = provider
        self.raw_finish: str | None = None
        self.prompt_blocked = False
        self.usage = Usage()
        self._new_id = new_id
        self._blocks: list[_Run | ToolUseBlock] = []

    @property
    def finished(self) -> bool:
        return self.raw_finish is not None

    def feed(self, chunk: Any) -> list[StreamItem]:
        """Absorb one ``GenerateContentResponse``; return the deltas it carries."""
        chunk = event_object(
            chunk,
            self.provider,
            wire="the Gemini API",
            error_text=_error_text,
            failed_hint="the server failed while answering; retry, or check the service status",
        )
        if isinstance(chunk.get("modelVersion"), str) and chunk["modelVersion"]:
            self.model = chunk["modelVersion"]
        if isinstance(chunk.get("usageMetadata"), dict):
            self.usage = _usage(chunk["usageMetadata"])
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            self.raw_finish = feedback["blockReason"]
            self.prompt_blocked = True
        candidates = chunk.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        return self._candidate(first) if isinstance(first, dict) else []

    def _candidate(self, candidate: Mapping[str, Any]) -> list[StreamItem]:
        finish = candidate.get("finishReason")
        if finish and isinstance(finish, str):
            self.raw_finish = finish
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        items: list[StreamItem] = []
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                items.extend(self._part(part))
        return items

    def _part(self, part: Mapping[str, Any]) -> list[StreamItem]:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._blocks.append(self._tool_use(call, signature))
            return []
        text = part.get("text")
        if not isinstance(text, str):
            text = ""
        if not text and signature is None:
            return []
        thinking = part.get("thought") is True
        run = self._blocks[-1] if self._blocks else None
        if not isinstance(run, _Run) or run.thinking != thinking or run.signature is not None:
            run = _Run(thinking)
            self._blocks.append(run)
        run.pieces.append(text)
        run.signature = signature
        if not text:
            return []
        return [ThinkingDelta(text) if thinking else TextDelta(text)]

    def _tool_use(self, call: Mapping[str, Any], signature: str | None) -> ToolUseBlock:
        call_id = call.get("id") if isinstance(call.get("id"), str) and call["id"] else None
        name = str(call.get("name") or "")
        args = call.get("args")
        if isinstance(args, dict) or args is None:
            arguments = args or {}
            return ToolUseBlock(call_id or self._new_id(), name, arguments, signature=signature)
        raw = json.dumps(args, ensure_ascii=False)
        return ToolUseBlock(call_id or self._new_id(), name, {}, raw, signature)

    def response(self) -> ModelResponse:
        blocks = tuple(b if isinstance(b, ToolUseBlock) else b.block() for b in self._blocks)
        finish: FinishReason = (
            "refusal" if self.prompt_blocked else _FINISH.get(self.raw_finish or "", "end_turn")
        )
        if finish == "end_turn" and any(isinstance(b, ToolUseBlock) for b in blocks):
            finish = "tool_use"  # Gemini says STOP when it calls functions
        message = Message("assistant", blocks)
        return ModelResponse(message, finish, self.usage, self.model, self.raw_finish)


def _usage(data: Mapping[str, Any]) -> Usage:
    """Gemini counts cached tokens inside ``promptTokenCount``; Usage keeps them apart.
    Thinking is billed as output, so ``thoughtsTokenCount`` is output too."""
    cached = _count(data.get("cachedContentTokenCount"))
    return Usage(
        input_tokens=max(_count(data.get("promptTokenCount")) - cached, 0),
        output_tokens=_count(data.get("candidatesTokenCount"))
        + _count(data.get("thoughtsTokenCount")),
        cache_read_tokens=cached,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _error_text(error: Any) -> str:
    if isinstance(error, dict) and error.get("message"):
        status = f" ({error['status']})" if isinstance(error.get("status"), str) else ""
        return f"{error['message']}{status}"[:500]
    return str(error)[:500]
