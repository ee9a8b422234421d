"""The request side of OpenAI chat completions: dialects and history conversion.

openheim's history is Anthropic-shaped (tool results are blocks of a user message); OpenAI wants
one ``role: tool`` message per result, right after the assistant message that made the calls.
Thinking blocks are not sent back: chat-completions servers neither need nor accept them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.providers.base import (
    ModelRequest,
    NamedTool,
    ProviderSettings,
    ToolChoice,
    ToolSpec,
)
from openheim.providers.json_body import ToolsJSON, encode

TOOL_ERROR_PREFIX = "Error: "
"""Prepended to failed tool results: the wire format has no is_error flag, so the text says it."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between endpoints that speak this wire format."""

    max_tokens_field: str
    """OpenAI's reasoning models reject ``max_tokens``; other servers only know that name."""
    key_hint: str
    """What to check when the server answers 401/403."""
    reasoning_effort: bool = False
    """Whether the endpoint takes ``reasoning_effort`` (OpenAI's reasoning models)."""


DIALECTS: dict[str, Dialect] = {
    "openai": Dialect(
        max_tokens_field="max_completion_tokens",
        key_hint="check the API key (the provider's api_key, usually from OPENAI_API_KEY) and "
        "that it may use this model",
        reasoning_effort=True,
    ),
    "openai_compatible": Dialect(
        max_tokens_field="max_tokens",
        key_hint="check the provider's api_key (hosted services need one; most local servers "
        "need none) and that it may use this model",
    ),
}


def dialect_for(kind: str) -> Dialect:
    """The dialect of a provider kind; kinds registered by plugins get the compatible one."""
    return DIALECTS.get(kind, DIALECTS["openai_compatible"])


def build_body(
    request: ModelRequest,
    settings: ProviderSettings,
    dialect: Dialect,
    tools: Callable[[tuple[ToolSpec, ...]], Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming ``/chat/completions`` call; ``tools`` makes its ``tools``
    member (``wire_tools`` unless given)."""
    body: dict[str, Any] = {
        "model": request.model or settings.model,
        "messages": convert_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    max_tokens = request.max_tokens or settings.max_tokens
    if max_tokens:
        body[dialect.max_tokens_field] = max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if dialect.reasoning_effort and settings.reasoning_effort:
        body["reasoning_effort"] = settings.reasoning_effort
    if request.tools:
        body["tools"] = (tools or wire_tools)(request.tools)
        if request.tool_choice != "auto":  # the default once tools are sent
            body["tool_choice"] = tool_choice(request.tool_choice)
    return body


def wire_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The ``tools`` member: one function object per tool."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": dict(spec.parameters),
            },
        }
        for spec in specs
    ]


_TOOLS = ToolsJSON(wire_tools)


def encode_body(request: ModelRequest, settings: ProviderSettings, dialect: Dialect) -> bytes:
    """``build_body`` as the bytes to send, the tool list encoded once (``json_body``)."""
    return encode(build_body(request, settings, dialect, _TOOLS))


def tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    """``auto`` / ``none`` / ``required`` pass through; a named tool becomes a function object."""
    if isinstance(choice, NamedTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def convert_messages(system: str | None, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The wire messages: the system prompt first, then each message in order."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "assistant":
            out.append(_assistant(message))
        else:
            out.extend(_user(message))
    return out


def _assistant(message: Message) -> dict[str, Any]:
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": block.arguments_json},
        }
        for block in message.content
        if isinstance(block, ToolUseBlock)
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        out["tool_calls"] = calls
    return out


def _user(message: Message) -> list[dict[str, Any]]:
    """Tool results become ``tool`` messages; the rest of the message follows them as ``user``."""
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": block.tool_use_id, "content": _result_text(block)}
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
        elif isinstance(block, ToolResultBlock) and block.images:
            # tool messages carry text only: the images follow in the next user message
            parts.append({"type": "text", "text": f"Images from tool call {block.tool_use_id}:"})
            parts.extend(_image_part(image) for image in block.images)
    if len(parts) == 1 and parts[0]["type"] == "text":
        out.append({"role": "user", "content": parts[0]["text"]})
    elif parts:
        out.append({"role": "user", "content": parts})
    return out


def _image_part(block: ImageBlock) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def _result_text(block: ToolResultBlock) -> str:
    return TOOL_ERROR_PREFIX + block.content if block.is_error else block.content
