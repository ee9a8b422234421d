"""Conversation messages made of content blocks, plus usage and stop reasons.

Blocks are frozen dataclasses with a ``kind`` discriminator. Anything a provider needs to round
trip (thinking signatures, tool call ids, unparsable arguments) is carried, never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Role: TypeAlias = Literal["user", "assistant"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

StopReason: TypeAlias = Literal[
    "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"
]
"""Why a prompt turn ended: exactly the Agent Client Protocol's five stop reasons."""

FinishReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_tokens", "refusal", "pause_turn", "repetition"
]
"""Why one model response ended, as a provider reports it (mapped from each wire format);
``repetition``: the repetition guard stopped a reply that kept repeating itself."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    signature: str | None = None
    """Opaque provider data to send back with this text (Gemini's ``thoughtSignature``)."""
    signed_by: str | None = None
    """Who made ``signature`` (see ``ThinkingBlock.signed_by``)."""
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning; ``signature`` is opaque provider data that must be sent back verbatim.

    ``redacted`` blocks carry encrypted reasoning in ``signature`` and no readable text.
    """

    thinking: str
    signature: str | None = None
    redacted: bool = False
    signed_by: str | None = None
    """The provider and model that made ``signature`` (``name/model``), set by a fallback chain
    so that the signature goes back only to them: another provider would refuse it."""
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: str
    """Base64-encoded bytes."""
    mime_type: str
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call the model made.

    ``arguments`` is the parsed JSON object. When the model sent something that is not a JSON
    object, ``arguments`` is empty and ``raw_arguments`` keeps the text so it can be replayed and
    reported back to the model as an error.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    signature: str | None = None
    """Opaque provider data to send back with this call (Gemini's ``thoughtSignature``)."""
    error: str | None = None
    """Set when the provider could not make sense of the call (a malformed action envelope):
    the loop sends this text back as the call's error result instead of running anything."""
    signed_by: str | None = None
    """Who made ``signature`` (see ``ThinkingBlock.signed_by``)."""
    kind: Literal["tool_use"] = "tool_use"

    @property
    def arguments_json(self) -> str:
        """The arguments as the model sent them (for wire formats that carry a JSON string)."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))

    @property
    def call_key(self) -> str:
        """Canonical identity of the call (name and arguments), used by the loop guard."""
        return (
            self.name
            + "\x00"
            + (
                self.raw_arguments
                if self.raw_arguments is not None
                else json.dumps(self.arguments, sort_keys=True, separators=(",", ":"))
            )
        )


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    images: tuple[ImageBlock, ...] = ()
    """Images the tool returned (an MCP screenshot tool, say), sent to the model with the text."""
    kind: Literal["tool_result"] = "tool_result"


ContentBlock: TypeAlias = TextBlock | ThinkingBlock | ImageBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[ContentBlock, ...]

    @classmethod
    def user(cls, text: str, *extra: ContentBlock) -> Message:
        return cls("user", (TextBlock(text), *extra))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        """All text blocks joined (thinking excluded)."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [block_to_dict(b) for b in self.content]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        role = data["role"]
        if role not in ("user", "assistant"):
            raise ValueError(f"unknown message role {role!r}")
        return cls(role, tuple(block_from_dict(b) for b in data["content"]))


_BLOCK_TYPES: dict[str, type[ContentBlock]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "image": ImageBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
}


_LEFT_OUT_WHEN_EMPTY = frozenset({"images", "signed_by"})


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in block.__dataclass_fields__:
        value = getattr(block, name)
        if name in _LEFT_OUT_WHEN_EMPTY:
            # left out when empty, so older readers see the same rows as before
            if name == "images" and value:
                out[name] = [block_to_dict(image) for image in value]
            elif value:
                out[name] = value
            continue
        out[name] = dict(value) if isinstance(value, Mapping) else value
    return out


def block_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    kind = data.get("kind")
    block_type = _BLOCK_TYPES.get(str(kind))
    if block_type is None:
        raise ValueError(f"unknown content block kind {kind!r}")
    fields = {k: v for k, v in data.items() if k != "kind"}
    if "images" in fields:
        fields["images"] = tuple(
            ImageBlock(**{k: v for k, v in i.items() if k != "kind"}) for i in fields["images"]
        )
    return block_type(**fields)


def _image(data: Mapping[str, Any]) -> ImageBlock:
    return ImageBlock(data["data"], data["mime_type"])


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more model calls; ``+`` adds them up.

    ``input_tokens`` counts only input read fresh: tokens read from the provider's prompt cache
    are in ``cache_read_tokens`` and tokens written to it in ``cache_write_tokens``, never in
    ``input_tokens`` too, so each count is priced once.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


def tool_results_message(results: Iterable[ToolResultBlock], *extra: ContentBlock) -> Message:
    """The user message that answers an assistant message's tool calls."""
    return Message("user", (*results, *extra))


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD. A ``str`` may hold one (``\\ud800`` in JSON
    from a client or a model, an undecodable byte Python kept as ``\\udce9``), but no UTF-8
    can carry it: sent to a provider as it is, it fails the request, and every later one."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def valid_message(message: Message) -> Message:
    """``message`` with each lone surrogate in it (text, tool arguments, results) as U+FFFD;
    the same object when it has none."""
    data = json.dumps(message.to_dict(), ensure_ascii=False)
    if _LONE_SURROGATE.search(data) is None:
        return message
    return Message.from_dict(json.loads(valid_text(data)))
