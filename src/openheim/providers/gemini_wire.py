"""Gemini ``generateContent`` request bodies: contents, tools, tool config, generation config.

Messages become ``contents`` with roles ``user`` and ``model``. Everything Gemini signed is sent
back on the same kind of part it came on: ``thoughtSignature`` of thought, text and
``functionCall`` parts (Gemini 3 rejects a function call replayed without its signature).

Tool schemas are converted to Gemini's ``Schema`` (a subset of OpenAPI 3.0: upper-case ``type``,
``nullable``, no ``additionalProperties``, ``$ref`` or ``oneOf``) and sent as ``parameters``.
``parametersJsonSchema`` would take JSON Schema as is, but older models and endpoints do not
know it, while ``parameters`` works everywhere; so the conversion is done here, and tested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from openheim.errors import ConfigError
from openheim.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.providers.base import ModelRequest, NamedTool, ProviderSettings, ToolChoice, ToolSpec
from openheim.providers.json_body import ToolsJSON, encode

_TYPES = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_KEPT = frozenset(
    {
        "default",
        "description",
        "example",
        "format",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "nullable",
        "pattern",
        "propertyOrdering",
        "required",
        "title",
    }
)
"""JSON Schema keywords that Gemini's ``Schema`` has under the same name and meaning."""
_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "BOOLEAN"),  # before int: a bool is an int in Python
    (int, "INTEGER"),
    (float, "NUMBER"),
)
_MODES = {"none": "NONE", "required": "ANY"}


def build_body(
    request: ModelRequest,
    settings: ProviderSettings,
    tools: Callable[[tuple[ToolSpec, ...]], Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``streamGenerateContent`` call (the model is in the URL); ``tools``
    makes its ``tools`` member (``wire_tools`` unless given)."""
    body: dict[str, Any] = {"contents": convert_messages(request.messages)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        body["tools"] = (tools or wire_tools)(request.tools)
        if request.tool_choice != "auto":  # Gemini's default mode
            body["toolConfig"] = tool_config(request.tool_choice)
    generation: dict[str, Any] = {}
    max_tokens = request.max_tokens or settings.max_tokens
    if max_tokens:
        generation["maxOutputTokens"] = max_tokens
    if request.temperature is not None:
        generation["temperature"] = request.temperature
    thinking = thinking_config(settings.thinking)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    if generation:
        body["generationConfig"] = generation
    return body


def wire_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The ``tools`` member: one ``functionDeclarations`` list."""
    return [{"functionDeclarations": [declaration(t) for t in specs]}]


_TOOLS = ToolsJSON(wire_tools)


def encode_body(request: ModelRequest, settings: ProviderSettings) -> bytes:
    """``build_body`` as the bytes to send, the tool list encoded once (``json_body``)."""
    return encode(build_body(request, settings, _TOOLS))


def thinking_config(thinking: str | int | None) -> dict[str, Any] | None:
    """``thinkingConfig`` for the ``thinking`` setting; None leaves the model's default.

    ``adaptive`` is budget -1 (the model decides), ``off`` budget 0, a number that budget.
    Thoughts are asked for whenever the model may think, so they can be shown and replayed.
    """
    if thinking is None:
        return None
    if thinking == "adaptive":
        return {"thinkingBudget": -1, "includeThoughts": True}
    if thinking == "off":
        return {"thinkingBudget": 0}
    if isinstance(thinking, int) and not isinstance(thinking, bool) and thinking >= 0:
        return {"thinkingBudget": thinking, "includeThoughts": thinking > 0}
    raise ConfigError(
        f"thinking = {thinking!r} is not a thinking setting Gemini understands",
        hint='set thinking to "adaptive", "off" or a token budget such as 4096',
    )


def tool_config(choice: ToolChoice) -> dict[str, Any]:
    """``toolConfig`` for a tool choice other than ``auto``."""
    if isinstance(choice, NamedTool):
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice.name]}}
    return {"functionCallingConfig": {"mode": _MODES.get(choice, "AUTO")}}


def declaration(spec: ToolSpec) -> dict[str, Any]:
    """A ``functionDeclaration``; a tool without arguments has no ``parameters``."""
    out: dict[str, Any] = {"name": spec.name, "description": spec.description}
    parameters = gemini_schema(spec.parameters)
    if parameters.get("properties"):
        out["parameters"] = parameters
    return out


def gemini_schema(schema: Any) -> dict[str, Any]:
    """A JSON schema rewritten as Gemini's ``Schema``; keywords it lacks are left out.

    ``type`` is upper-cased (``["string", "null"]`` becomes ``STRING`` plus ``nullable``),
    ``oneOf`` becomes ``anyOf``, ``const`` a one-value ``enum``. Gemini enums hold strings only,
    so an enum of other values becomes its type, with the values named in the description.
    """
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Any] = {key: value for key, value in schema.items() if key in _KEPT}
    out.update(_type_of(schema))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {str(k): gemini_schema(v) for k, v in properties.items()}
        out.setdefault("type", "OBJECT")
    if "items" in schema:
        out["items"] = gemini_schema(schema["items"])
        out.setdefault("type", "ARRAY")
    options = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(options, list):
        out["anyOf"] = [gemini_schema(option) for option in options]
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list):
        _add_enum(out, values)
    return out


def _type_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    names = kind if isinstance(kind, list) else [kind]
    out: dict[str, Any] = {}
    if "null" in names:
        out["nullable"] = True
    known = [_TYPES[n] for n in names if isinstance(n, str) and n in _TYPES]
    if known:
        out["type"] = known[0]
    return out


def _add_enum(out: dict[str, Any], values: list[Any]) -> None:
    if all(isinstance(v, str) for v in values):
        out["enum"] = values
        out.setdefault("type", "STRING")
        return
    kind = next((name for tp, name in _VALUE_TYPES if values and isinstance(values[0], tp)), None)
    if kind is not None:
        out.setdefault("type", kind)
    allowed = "one of: " + ", ".join(map(repr, values))
    out["description"] = f"{out['description']} ({allowed})" if "description" in out else allowed


def convert_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The ``contents``: one per message (``assistant`` is ``model``), empty ones left out.

    A tool result's ``functionResponse`` needs the function's name, which our result block does
    not carry: it is looked up from the call with the same id earlier in the conversation.
    """
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for message in messages:
        parts = []
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                names[block.id] = block.name
            part = _part(block, names)
            if part is not None:
                parts.append(part)
            if isinstance(block, ToolResultBlock):  # images travel as parts after the response
                parts.extend(_inline(image) for image in block.images)
        if parts:
            contents.append(
                {"role": "model" if message.role == "assistant" else "user", "parts": parts}
            )
    return contents


def _part(block: ContentBlock, names: Mapping[str, str]) -> dict[str, Any] | None:
    part: dict[str, Any]
    if isinstance(block, TextBlock):
        if not block.text and not block.signature:
            return None
        part = {"text": block.text}
    elif isinstance(block, ThinkingBlock):
        if block.redacted:  # another provider's encrypted reasoning: nothing Gemini can read
            return None
        part = {"text": block.thinking, "thought": True}
    elif isinstance(block, ImageBlock):
        return _inline(block)
    elif isinstance(block, ToolUseBlock):
        part = {"functionCall": {"id": block.id, "name": block.name, "args": dict(block.arguments)}}
    else:
        return {"functionResponse": _function_response(block, names)}
    if block.signature:
        part["thoughtSignature"] = block.signature
    return part


def _inline(block: ImageBlock) -> dict[str, Any]:
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def _function_response(block: ToolResultBlock, names: Mapping[str, str]) -> dict[str, Any]:
    # Without its call (trimmed away), the id is the best name left; Gemini requires one.
    name = names.get(block.tool_use_id, block.tool_use_id)
    key = "error" if block.is_error else "result"
    return {"id": block.tool_use_id, "name": name, "response": {key: block.content}}
