"""openheim → Agent Client Protocol: events and stored messages as ``session/update`` payloads.

Pure functions that build the SDK's pydantic models; the server decides when to send them
(notices, each a message of its own, are built by ``openheim.acp.notices``). Tool calls get
a human title and file locations from their arguments, so an editor can show "Edit src/x.py"
and jump to the file. ``replay_updates`` turns a stored conversation back into the
updates a client saw live, for ``session/load``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, cast, get_args

from acp.helpers import ToolCallContentVariant as ToolContent
from acp.helpers import (
    image_block,
    text_block,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_user_message,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    Cost,
    ImageContentBlock,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
    UsageUpdate,
    UserMessageChunk,
)

from openheim.events import (
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
)
from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.runtime import titles

ReplayUpdate: TypeAlias = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart

NO_RESULT = "no result was stored"
_KINDS: frozenset[str] = frozenset(get_args(ToolKind))


def tool_locations(arguments: Mapping[str, Any], cwd: Path) -> list[ToolCallLocation]:
    """The file a call touches, from its ``path`` argument (line from ``offset`` when ≥ 1)."""
    raw = titles.str_arg(arguments, "path")
    if raw is None:
        return []
    offset = arguments.get("offset")
    valid = isinstance(offset, int) and not isinstance(offset, bool) and offset >= 1
    return [
        ToolCallLocation(path=str(titles.absolute_path(raw, cwd)), line=offset if valid else None)
    ]


def acp_kind(tool_kind: str) -> ToolKind:
    """The ACP tool kind for ``tool_kind``: itself when ACP knows it, otherwise ``other``."""
    return cast(ToolKind, tool_kind) if tool_kind in _KINDS else "other"


def tool_call_start(event: ToolCall, cwd: Path) -> ToolCallStart:
    """The ``tool_call`` update announcing a call the model made (status "pending")."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=event.id,
        title=titles.tool_title(event.name, event.arguments, cwd),
        kind=acp_kind(event.tool_kind),
        status="pending",
        locations=tool_locations(event.arguments, cwd),
        raw_input=dict(event.arguments),
    )


def _result_content(text: str, images: Sequence[ImageBlock] = ()) -> list[ToolContent]:
    """A result's text (left out when empty) and images as tool call content."""
    blocks: list[TextContentBlock | ImageContentBlock] = [text_block(text)] if text else []
    blocks += (image_block(i.data, i.mime_type) for i in images)
    return [ContentToolCallContent(type="content", content=b) for b in blocks]


def _raw_output(content: str, status: str, is_error: bool) -> dict[str, Any]:
    """A finished call's ``rawOutput``: the same shape live and replayed."""
    return {"content": content, "status": status, "isError": is_error}


def tool_call_done(event: ToolResult) -> ToolCallProgress:
    """The ``tool_call_update`` that ends a call: its status, diff (for a completed edit) and
    result text. Denied and cancelled calls are "failed" to ACP; ``rawOutput`` keeps which."""
    completed = event.status == "completed"
    content: list[ToolContent] = []
    if (diff := event.diff) is not None and completed:
        content.append(tool_diff_content(diff.path, diff.new_text, diff.old_text))
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=event.id,
        status="completed" if completed else "failed",
        content=content + _result_content(event.content),
        raw_output=_raw_output(event.content, event.status, event.is_error),
    )


def usage_update(
    total_in_context: int, context_window: int, session_cost: float | None
) -> UsageUpdate:
    """The ``usage_update``: tokens in the context out of the window (both at least 0), and the
    session's cost in US dollars when a price is known."""
    cost = None if session_cost is None else Cost(amount=session_cost, currency="USD")
    used, size = max(0, total_in_context), max(0, context_window)
    return UsageUpdate(session_update="usage_update", used=used, size=size, cost=cost)


def event_update(event: Event) -> AgentMessageChunk | AgentThoughtChunk | None:
    """The streamed update of a text or thinking delta; None for any other event (the turn
    sends notices, tool calls and usage itself)."""
    if isinstance(event, TextDelta):
        return update_agent_message_text(event.text)
    if isinstance(event, ThinkingDelta):
        return update_agent_thought_text(event.text)
    return None


def _results_of_uses(messages: Sequence[Message]) -> Iterator[ToolResultBlock | None]:
    """The stored result of every tool use, in conversation order: the nearest result with its
    id in a later message, or None. Ids can repeat across turns (the envelope's error id), so
    the messages are walked backwards and each use claims the result nearest after it."""
    later: dict[str, ToolResultBlock] = {}
    found: list[ToolResultBlock | None] = []
    for message in reversed(messages):
        for block in reversed(message.content):
            if isinstance(block, ToolResultBlock):
                later[block.tool_use_id] = block
            elif isinstance(block, ToolUseBlock):
                found.append(later.pop(block.id, None))
    return reversed(found)


def _replayed_call(
    use: ToolUseBlock, result: ToolResultBlock | None, cwd: Path, kind: str
) -> ToolCallStart:
    """One ``tool_call`` carrying the call's final status, result content and raw output.

    Stored results keep only ``is_error``, so a denied or cancelled call replays as "failed"."""
    if result is None:
        result = ToolResultBlock(use.id, NO_RESULT, is_error=True)
    status: ToolCallStatus = "failed" if result.is_error else "completed"
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=use.id,
        title=titles.tool_title(use.name, use.arguments, cwd),
        kind=acp_kind(kind),
        status=status,
        content=_result_content(result.content, result.images),
        locations=tool_locations(use.arguments, cwd),
        raw_input=dict(use.arguments),
        raw_output=_raw_output(result.content, status, result.is_error),
    )


def _user_updates(message: Message) -> Iterator[UserMessageChunk]:
    """A user message's text and images; nothing for a tool-results message (any block is a
    tool result): the loop wrote it, extra text in it (guidance) included, not the user."""
    if any(isinstance(block, ToolResultBlock) for block in message.content):
        return
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            yield update_user_message_text(block.text)
        elif isinstance(block, ImageBlock):
            yield update_user_message(image_block(block.data, block.mime_type))


def replay_updates(
    messages: Sequence[Message], cwd: Path, tool_kinds: Mapping[str, str] | None = None
) -> list[ReplayUpdate]:
    """The updates that replay a stored conversation for ``session/load``.

    User text and images become ``user_message_chunk``s (tool-results messages are skipped,
    see ``_user_updates``), assistant text ``agent_message_chunk``s, readable thinking
    ``agent_thought_chunk``s, and each tool use one ``tool_call`` with its final status and
    result (messages store no diffs, so none is replayed). Stored calls do not record their
    tool's kind: ``tool_kinds`` maps tool names to kinds, any other tool is "other".
    """
    kinds = tool_kinds or {}
    results = _results_of_uses(messages)
    updates: list[ReplayUpdate] = []
    for message in messages:
        if message.role == "user":
            updates += _user_updates(message)
            continue
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                updates.append(update_agent_message_text(block.text))
            elif isinstance(block, ThinkingBlock) and block.thinking and not block.redacted:
                updates.append(update_agent_thought_text(block.thinking))
            elif isinstance(block, ToolUseBlock):
                kind = kinds.get(block.name, "other")
                updates.append(_replayed_call(block, next(results), cwd, kind))
    return updates
