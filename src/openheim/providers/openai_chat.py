"""OpenAI chat completions: kind ``openai`` and every OpenAI-compatible server.

Ollama, vLLM, llama.cpp, LM Studio and OpenRouter speak this wire format with small differences;
those live in ``Dialect`` as data, not in a second copy of the adapter. A call POSTs
``{api_base}/chat/completions`` with ``stream: true`` and reads Server-Sent Events with
``providers.sse``; each ``data:`` is one ``chat.completion.chunk`` and ``[DONE]`` ends the stream.
The request conversion lives in ``openai_wire``; this module does the transport and parsing.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

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
from openheim.providers.http_base import HTTPProvider, event_object
from openheim.providers.openai_wire import Dialect, dialect_for, encode_body

_FINISH: dict[str, FinishReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def create(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> OpenAIChatProvider:
    """The registry's factory for kinds ``openai`` and ``openai_compatible``."""
    return OpenAIChatProvider(settings, http_client)


class OpenAIChatProvider(HTTPProvider):
    """A Provider speaking OpenAI chat completions to one endpoint (``Authorization: Bearer``)."""

    wire_name = "the OpenAI chat-completions API"
    example_base = "http://localhost:11434/v1"
    key_env = "OPENAI_API_KEY"

    def __init__(
        self, settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
    ) -> None:
        super().__init__(settings, http_client)
        self.dialect: Dialect = dialect_for(settings.kind)
        self.url = settings.api_base.rstrip("/") + "/chat/completions"
        self._ids = itertools.count(1)

    @property
    def key_hint(self) -> str:
        return self.dialect.key_hint

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        """Stream one completion: text and thinking deltas, then one ``ModelResponse``. The
        events are read right here, inside the POST's block (no generator in between)."""
        model = request.model or self.settings.model
        body = encode_body(request, self.settings, self.dialect)
        state = _Accumulator(model, self._new_id, self.name)
        async with self.open_sse(self.url, body, model) as source:
            if not self.is_event_stream(source):
                items = state.feed(_completion_as_chunk(await self.whole_body(source, self.url)))
                state.done = True
                for item in [*items, state.response()]:
                    yield item
                return
            while not state.done and (events := await source.next_events()):
                for event in events:
                    data = event.data.strip()
                    if data == "[DONE]":
                        state.done = True
                        break
                    if data:
                        for item in state.feed(self.decode(data, self.url)):
                            yield item
            if not state.done and state.raw_finish is None:
                raise self.stream_cut(
                    self.url, "closed the stream without [DONE] or a finish reason"
                )
            yield state.response()

    def _new_id(self) -> str:
        """An id for a tool call the server sent without one; unique per provider."""
        return f"call_{next(self._ids)}"


def _completion_as_chunk(data: Any) -> Any:
    """A non-streamed ``chat.completion`` rewritten as one chunk whose deltas hold everything."""
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        return data
    choices = []
    for choice in data["choices"]:
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        delta = dict(message) if isinstance(message, dict) else {}
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [
                {**call, "index": i} for i, call in enumerate(calls) if isinstance(call, dict)
            ]
        choices.append({**choice, "delta": delta})
    return {**data, "choices": choices}


@dataclass(slots=True)
class _ToolCallDraft:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Accumulator:
    """Builds the final message from stream chunks, tolerating each server's way of chunking.

    Tool calls are assembled by ``index``. Servers that repeat the id and name in every fragment
    are fine (the first wins); a known index arriving with a different id is a new call.
    """

    def __init__(self, model: str, new_id: Callable[[], str], provider: str) -> None:
        self.model = model
        self.provider = provider
        self.done = False
        self.raw_finish: str | None = None
        self.usage = Usage()
        self._new_id = new_id
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[_ToolCallDraft] = []
        self._by_index: dict[int, _ToolCallDraft] = {}

    def feed(self, chunk: Any) -> list[StreamItem]:
        """Absorb one chunk; return the deltas it carries.

        Most chunks of a stream are one choice whose delta is text and nothing else: those take
        a few exact type checks; every other chunk (and every odd type) goes through
        ``absorb``, which reads each field as it may come."""
        choices = chunk.get("choices") if chunk.__class__ is dict else None
        if choices.__class__ is list and len(choices) == 1 and chunk.get("usage") is None:
            choice = choices[0]
            delta = choice.get("delta") if choice.__class__ is dict else None
            if (
                delta.__class__ is dict
                and len(delta) == 1
                and (content := delta.get("content")).__class__ is str
                and choice.get("finish_reason") is None
                and choice.get("index", 0) == 0
                and not chunk.get("error")
            ):
                model = chunk.get("model")
                if model.__class__ is str and model:
                    self.model = model
                if not content:
                    return []
                self._text.append(content)
                return [TextDelta(content)]
        return self.absorb(chunk)

    def absorb(self, chunk: Any) -> list[StreamItem]:
        """Absorb any chunk, each field checked for its type (a field of the wrong type is
        ignored, a chunk that is not an object or that holds an error is refused)."""
        chunk = event_object(
            chunk,
            self.provider,
            wire="the OpenAI format",
            error_text=_error_text,
            failed_hint="the server failed while answering; retry, or check its logs",
        )
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        items: list[StreamItem] = []
        for choice in _listed(chunk.get("choices")):
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, items)
        return items

    def _choice(self, choice: Mapping[str, Any], items: list[StreamItem]) -> None:
        """Absorb one choice, appending the deltas it carries to ``items``."""
        finish = choice.get("finish_reason")
        if finish and isinstance(finish, str):
            self.raw_finish = finish
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            self._thinking.append(reasoning)
            items.append(ThinkingDelta(reasoning))
        content = delta.get("content")
        if content and isinstance(content, str):
            self._text.append(content)
            items.append(TextDelta(content))
        for fragment in _listed(delta.get("tool_calls")):
            if isinstance(fragment, dict):
                self._add_fragment(fragment)

    def _add_fragment(self, fragment: Mapping[str, Any]) -> None:
        call_id = fragment.get("id") if isinstance(fragment.get("id"), str) else ""
        draft = self._draft_for(fragment.get("index"), call_id or "")
        if call_id and not draft.id:
            draft.id = call_id
        function = fragment.get("function")
        if not isinstance(function, dict):
            return
        if isinstance(function.get("name"), str) and not draft.name:
            draft.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            draft.arguments.append(arguments)
        elif isinstance(arguments, dict):
            draft.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _draft_for(self, index: Any, call_id: str) -> _ToolCallDraft:
        draft: _ToolCallDraft | None
        if isinstance(index, int):
            draft = self._by_index.get(index)
        elif call_id:
            draft = next((d for d in self._calls if d.id == call_id), None)
        else:
            draft = self._calls[-1] if self._calls else None
        if draft is not None and call_id and draft.id and draft.id != call_id:
            draft = None
        if draft is None:
            draft = _ToolCallDraft()
            self._calls.append(draft)
            if isinstance(index, int):
                self._by_index[index] = draft
        return draft

    def response(self) -> ModelResponse:
        """The complete assistant message: thinking, then text, then tool calls."""
        blocks: list[ContentBlock] = []
        if self._thinking:
            blocks.append(ThinkingBlock("".join(self._thinking)))
        if self._text:
            blocks.append(TextBlock("".join(self._text)))
        blocks.extend(self._tool_use(draft) for draft in self._calls)
        finish = _FINISH.get(self.raw_finish or "", "end_turn")
        if self._calls and finish == "end_turn":
            finish = "tool_use"  # some servers say "stop" even when they call tools
        message = Message("assistant", tuple(blocks))
        return ModelResponse(message, finish, self.usage, self.model, self.raw_finish)

    def _tool_use(self, draft: _ToolCallDraft) -> ToolUseBlock:
        call_id = draft.id or self._new_id()
        text = "".join(draft.arguments)
        if not text.strip():
            return ToolUseBlock(call_id, draft.name, {})
        try:
            parsed = safejson.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return ToolUseBlock(call_id, draft.name, parsed)
        return ToolUseBlock(call_id, draft.name, {}, raw_arguments=text)


def _usage(data: Mapping[str, Any]) -> Usage:
    details = data.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens") if isinstance(details, dict) else None)
    prompt = _count(data.get("prompt_tokens"))
    return Usage(  # OpenAI counts cached tokens inside prompt_tokens; Usage keeps them apart
        input_tokens=max(prompt - cached, 0),
        output_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=cached,
    )


def _listed(value: Any) -> list[Any]:
    """``value`` if it is a JSON list; else nothing (a server's odd field is ignored, as any
    other field of the wrong type is)."""
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _error_text(error: Any) -> str:
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:500]
    return str(error)[:500]
