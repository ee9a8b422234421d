"""A stored conversation as the events a surface saw live, so a restored session can be shown
again: each user prompt as a ``UserTurn``, the answers as text and thinking deltas, and every
tool call with its result (tool items included)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from openheim.events import TextDelta, ThinkingDelta, ToolCall, ToolResult, ToolStatus
from openheim.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock


@dataclass(frozen=True, slots=True)
class UserTurn:
    """What the user typed (the text blocks of a user message that is not only tool results)."""

    text: str


Replayed: TypeAlias = UserTurn | TextDelta | ThinkingDelta | ToolCall | ToolResult


def replay_events(messages: Sequence[Message]) -> Iterator[Replayed]:
    """The conversation in ``messages`` as events, in order; a tool result follows its call."""
    names: dict[str, str] = {}
    for message in messages:
        if message.role == "user":
            yield from _user(message, names)
        else:
            yield from _assistant(message, names)


def _user(message: Message, names: dict[str, str]) -> Iterator[Replayed]:
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    if text:
        yield UserTurn(text)
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            name = names.get(block.tool_use_id, "tool")
            status = _status(block)
            yield ToolResult(block.tool_use_id, name, block.content, block.is_error, status)


def _assistant(message: Message, names: dict[str, str]) -> Iterator[Replayed]:
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            yield TextDelta(block.text)
        elif isinstance(block, ThinkingBlock) and block.thinking:
            yield ThinkingDelta(block.thinking)
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            yield ToolCall(block.id, block.name, block.arguments)


def _status(block: ToolResultBlock) -> ToolStatus:
    """How a stored result ended: its text starts with ``denied:`` or ``cancelled:`` when the
    call was refused or cancelled (as the loop writes them)."""
    if not block.is_error:
        return "completed"
    if block.content.startswith("denied:"):
        return "denied"
    return "cancelled" if block.content.startswith("cancelled:") else "failed"
