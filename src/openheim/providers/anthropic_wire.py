"""Anthropic Messages apart from the transport: the request body, and the response vocabulary.

The response side here is only vocabulary (stop reasons, usage, error types); the stream itself
is parsed in ``anthropic``. On the request side openheim's history is already Anthropic-shaped,
so conversion is mostly renaming. What needs care:

* Thinking blocks go back verbatim with their signature (redacted ones as ``redacted_thinking``
  with their ``data``); a thinking block without a signature (from another provider) is dropped,
  since the API refuses unsigned thinking.
* Tool results must open their user message, empty text blocks are refused, and roles must
  alternate: messages are reordered, filtered and merged accordingly.
* Prompt caching: ``cache_control`` marks the system prompt, the last tool and the last block of
  the latest user turn (three of the four breakpoints the API allows), so every call of an
  agent loop reads the conversation so far from the cache.
* Thinking: ``"adaptive"`` sends ``{"type": "adaptive"}`` (the model decides how much to think;
  Claude Opus 4.6, Sonnet 4.6 and later, the only mode of Opus 4.7) with ``display: summarized``
  so the reasoning stays visible; older models need a token budget, which sends
  ``{"type": "enabled", "budget_tokens": N}`` (at least 1024, the API's minimum) and makes room
  for it in ``max_tokens``. The API refuses thinking together with a forced tool choice or a
  temperature, so a forced tool choice turns thinking off for that call and thinking drops the
  temperature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from openheim.errors import ConfigError, ContextOverflow, ProviderError, ProviderHTTPError
from openheim.formats import safejson
from openheim.messages import (
    ContentBlock,
    FinishReason,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from openheim.providers.base import ModelRequest, NamedTool, ProviderSettings, ToolChoice, ToolSpec
from openheim.providers.json_body import ToolsJSON, encode

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is used when neither request nor settings set it."""
ADAPTIVE_MAX_TOKENS = 16000
"""The default with adaptive thinking, where thinking and answer share ``max_tokens``."""
MIN_THINKING_BUDGET = 1024
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}

Thinking: TypeAlias = int | str | None
"""A validated thinking setting: a token budget, ``"adaptive"``, or None for off."""
WireBlock: TypeAlias = dict[str, Any]


def parse_thinking(settings: ProviderSettings) -> Thinking:
    """``settings.thinking`` validated: a budget of at least 1024, ``"adaptive"``, or None."""
    value = settings.thinking
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", "off", "none", "disabled", "false"):
            return None
        if text == "adaptive":
            return "adaptive"
        value = int(text) if text.isdigit() else None
        if value is None:
            raise ConfigError(
                f"provider {settings.name!r} has thinking = {settings.thinking!r}",
                hint='set thinking to "adaptive", "off" or a token budget such as 8000',
            )
    if isinstance(value, bool) or not value or value < 0:
        return None
    return max(value, MIN_THINKING_BUDGET)


def build_body(
    request: ModelRequest,
    settings: ProviderSettings,
    thinking: Thinking,
    tools: Callable[[tuple[ToolSpec, ...]], Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming ``POST /messages`` call; ``tools`` makes its ``tools``
    member (``wire_tools`` unless given)."""
    forced = request.tools and (
        request.tool_choice == "required" or isinstance(request.tool_choice, NamedTool)
    )
    if forced:
        thinking = None
    body: dict[str, Any] = {
        "model": request.model or settings.model,
        "max_tokens": max_tokens(request.max_tokens or settings.max_tokens, thinking),
        "messages": convert_messages(request.messages),
        "stream": True,
    }
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    if thinking is not None:
        body["thinking"] = thinking_config(thinking)
    elif request.temperature is not None:
        body["temperature"] = request.temperature
    if request.tools:
        body["tools"] = (tools or wire_tools)(request.tools)
        if request.tool_choice != "auto":  # the API's default once tools are sent
            body["tool_choice"] = tool_choice(request.tool_choice)
    return body


def wire_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The ``tools`` member; the last tool marks the end of the cached prefix."""
    tools: list[dict[str, Any]] = [
        {"name": s.name, "description": s.description, "input_schema": dict(s.parameters)}
        for s in specs
    ]
    tools[-1]["cache_control"] = EPHEMERAL
    return tools


_TOOLS = ToolsJSON(wire_tools)


def encode_body(request: ModelRequest, settings: ProviderSettings, thinking: Thinking) -> bytes:
    """``build_body`` as the bytes to send, the tool list encoded once (``json_body``)."""
    return encode(build_body(request, settings, thinking, _TOOLS))


def max_tokens(requested: int | None, thinking: Thinking) -> int:
    """The wire ``max_tokens``, which covers thinking and answer together.

    With a thinking budget it must exceed the budget; when it would not, the budget is added on
    top so the answer keeps the room that was asked for.
    """
    if isinstance(thinking, int):
        answer = requested or DEFAULT_MAX_TOKENS
        return answer if answer > thinking else thinking + answer
    if thinking == "adaptive":
        return requested or ADAPTIVE_MAX_TOKENS
    return requested or DEFAULT_MAX_TOKENS


def thinking_config(thinking: int | str) -> dict[str, Any]:
    if isinstance(thinking, int):
        return {"type": "enabled", "budget_tokens": thinking}
    return {"type": "adaptive", "display": "summarized"}


def tool_choice(choice: ToolChoice) -> dict[str, Any]:
    """``none`` / ``required`` (the API's ``any``) / a named tool, in the API's object form."""
    if isinstance(choice, NamedTool):
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice == "required" else choice}


def convert_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The wire messages: roles alternate, empty messages are left out, and the last block of
    the latest user turn carries a cache breakpoint."""
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = [b for b in map(_wire_block, message.content) if b is not None]
        if out and out[-1]["role"] == message.role:
            out[-1]["content"].extend(blocks)
        elif blocks:
            out.append({"role": message.role, "content": blocks})
    for wire in out:
        if wire["role"] == "user":  # tool results must open a user message
            wire["content"].sort(key=lambda block: block["type"] != "tool_result")
    latest_user = next((m for m in reversed(out) if m["role"] == "user"), None)
    if latest_user is not None:
        latest_user["content"][-1]["cache_control"] = EPHEMERAL
    return out


def _wire_block(block: ContentBlock) -> WireBlock | None:
    """One content block on the wire, or None for what the API would refuse."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ThinkingBlock):
        return _thinking_block(block)
    if isinstance(block, ImageBlock):
        source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
        return {"type": "image", "source": source}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": _input(block)}
    result: WireBlock = {"type": "tool_result", "tool_use_id": block.tool_use_id}
    if block.images:
        text = [{"type": "text", "text": block.content}] if block.content else []
        result["content"] = [*text, *(_wire_block(image) for image in block.images)]
    elif block.content:
        result["content"] = block.content
    if block.is_error:
        result["is_error"] = True
    return result


def _thinking_block(block: ThinkingBlock) -> WireBlock | None:
    if not block.signature:
        return None
    if block.redacted:
        return {"type": "redacted_thinking", "data": block.signature}
    return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}


def _input(block: ToolUseBlock) -> dict[str, Any]:
    """The call's arguments as an object; arguments that were not one are replayed as ``{}``."""
    if block.raw_arguments is None:
        return dict(block.arguments)
    try:
        parsed = safejson.loads(block.raw_arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


FINISH: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}
"""Anthropic's stop reasons as openheim's; an unknown one counts as ``end_turn``."""
_ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each error type of an ``error`` event stands for (its retryability)."""
_EVENT_HINTS: dict[int, str] = {
    429: "rate limited or out of quota: wait and retry, or check your plan's limits",
    500: "the API failed while answering; retry",
    504: "the API timed out while answering; retry",
    529: "the API is overloaded; retry later",
}


def usage(data: Mapping[str, Any]) -> Usage:
    """Anthropic's ``input_tokens`` already excludes cache reads and writes, as Usage does."""
    return Usage(
        input_tokens=_count(data.get("input_tokens")),
        output_tokens=_count(data.get("output_tokens")),
        cache_read_tokens=_count(data.get("cache_read_input_tokens")),
        cache_write_tokens=_count(data.get("cache_creation_input_tokens")),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def event_error(error: Any, provider: str) -> ProviderError:
    """The error an ``error`` event stands for, as if its type had come as an HTTP status."""
    kind = str(error.get("type", "")) if isinstance(error, dict) else ""
    detail = str(error.get("message", "")) if isinstance(error, dict) else str(error)
    message = (
        f"provider {provider!r} reported an error while answering: {kind or 'error'}: {detail}"
    )
    message = message[:700]
    if "prompt is too long" in detail.lower():
        return ContextOverflow(
            message,
            provider=provider,
            hint="the conversation is longer than the model's context window: "
            "start a new session or set context_window so openheim trims it",
        )
    status = _ERROR_STATUS.get(kind)
    if status is None:
        return ProviderError(
            message, hint="the server failed while answering; retry", provider=provider
        )
    hint = _EVENT_HINTS.get(status, "the API rejected the request; its message says why")
    return ProviderHTTPError(message, status=status, hint=hint, provider=provider)
