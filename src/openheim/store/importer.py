"""Import the Rust Openheim's conversation history (``~/.openheim/history/``) into the store.

Two layouts exist, both ``{uuid}.json`` files holding ``{"meta": {...}}``:

- the older one embeds the messages in the same file (``"messages": [...]``);
- the newer one keeps them in a ``{uuid}.jsonl`` beside it, one message a line (a torn last
  line, which a crash mid-append leaves, is dropped as the Rust reader does).

Messages come in two shapes as well: OpenAI-like (``content`` a string, ``tool_calls`` with
``function.arguments`` as a JSON string, role ``tool`` with ``tool_call_id``) and, later,
content blocks tagged by ``type`` (``text``, ``thinking``, ``redacted_thinking``, ``image``,
``tool_use``, ``tool_result``). System messages are dropped (the prompt is rebuilt each run);
consecutive ``tool`` messages become one user message of tool results.

The import runs on every start and stays cheap: each file's mtime is recorded, files seen with
the same mtime are skipped, and originals are only read. The session id stays the Rust uuid. A
file that cannot be read is skipped with a warning (once per mtime), never fatal.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openheim.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.store.base import SessionRecord, title_from
from openheim.store.common import SqlStore

log = logging.getLogger(__name__)

_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError)


def import_rust_history(store: SqlStore, history_dir: Path) -> int:
    """Import new or changed Rust history files; returns how many sessions were written."""
    marks = store.legacy_marks()
    written = 0
    for path in sorted(history_dir.glob("*.json")):
        if not _is_uuid(path.stem):
            continue
        mtime_ns = _mtime_ns(path)
        mark = marks.get(path.name)
        if mtime_ns is None or (mark is not None and mark.mtime_ns == mtime_ns):
            continue
        try:
            session: tuple[SessionRecord, list[Message]] | None = read_rust_session(path)
        except _UNREADABLE as exc:
            log.warning("skipping Rust Openheim history file %s: %s", path, exc)
            session = None
        if store.import_legacy(path.name, mtime_ns, session):
            written += 1
        elif session is not None:
            log.info("kept session %s: it changed here or was deleted here", session[0].id)
    return written


def read_rust_session(meta_path: Path) -> tuple[SessionRecord, list[Message]]:
    """The session in a Rust ``{uuid}.json`` (and its ``.jsonl``, when there is one)."""
    data = json.loads(meta_path.read_text(encoding="utf-8"))
    meta = _mapping(data, "the file")["meta"]
    log_path = meta_path.with_suffix(".jsonl")
    raw = _read_log(log_path) if log_path.exists() else data.get("messages") or []
    messages = convert_messages(raw)
    return _record(_mapping(meta, "meta"), messages), messages


def convert_messages(raw: Sequence[Any]) -> list[Message]:
    """Rust messages (either shape) as ours; raises ValueError on anything unknown."""
    out: list[Message] = []
    for item in raw:
        role = _mapping(item, "a message").get("role")
        if role == "system":
            continue
        if role not in ("user", "assistant", "tool"):
            raise ValueError(f"unknown message role {role!r}")
        blocks = _blocks(item, role)
        if not blocks:
            continue
        if role == "tool" and out and _only_results(out[-1]):
            out[-1] = Message("user", (*out[-1].content, *blocks))
        else:
            out.append(Message("assistant" if role == "assistant" else "user", blocks))
    return out


def _read_log(path: Path) -> list[Any]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items: list[Any] = []
    for index, line in enumerate(lines):
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError:
            if index < len(lines) - 1:
                raise
            log.warning("dropping the torn last line of %s", path)
    return items


def _record(meta: Mapping[str, Any], messages: Sequence[Message]) -> SessionRecord:
    created = _timestamp(meta["created_at"])
    skills = meta.get("skills") or []
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        raise ValueError("meta.skills is not a list of names")
    title = meta.get("title") or next(
        (t for t in map(title_from, messages) if t), ""
    )  # the Rust reader derived a missing title the same way
    return SessionRecord(
        id=str(uuid.UUID(str(meta["id"]))),
        title=str(title),
        cwd=str(meta.get("cwd") or ""),
        provider=str(meta.get("provider") or ""),
        model=str(meta.get("model") or ""),
        skills=skills,
        created_at=created,
        updated_at=_timestamp(meta.get("updated_at", created)),
        message_count=len(messages),
    )


def _blocks(item: Mapping[str, Any], role: str) -> tuple[ContentBlock, ...]:
    content = item.get("content")
    if isinstance(content, list):
        found = [_block(_mapping(b, "a content block")) for b in content]
        return tuple(b for b in found if b is not None)
    if content is not None and not isinstance(content, str):
        raise ValueError(f"message content of type {type(content).__name__}")
    text = content or ""
    if role == "tool":
        result = ToolResultBlock(str(item["tool_call_id"]), text, bool(item.get("is_error")))
        return (result,)
    blocks: list[ContentBlock] = [TextBlock(text)] if text else []
    for call in item.get("tool_calls") or []:
        function = call["function"]
        blocks.append(_tool_use(call["id"], function["name"], function.get("arguments")))
    return tuple(blocks)


def _block(block: Mapping[str, Any]) -> ContentBlock | None:
    """One tagged Rust content block as ours; None for an empty text block."""
    kind = block.get("type")
    if kind == "text":
        return TextBlock(str(block["text"])) if block["text"] else None
    if kind == "thinking":
        return ThinkingBlock(str(block["thinking"]), signature=block.get("signature"))
    if kind == "redacted_thinking":
        return ThinkingBlock("", signature=str(block["data"]), redacted=True)
    if kind == "image":
        return ImageBlock(str(block["data"]), str(block["mime_type"]))
    if kind == "tool_use":
        return _tool_use(block["id"], block["name"], block.get("arguments"), block.get("signature"))
    if kind == "tool_result":
        return ToolResultBlock(
            str(block["tool_call_id"]), str(block.get("content") or ""), bool(block.get("is_error"))
        )
    raise ValueError(f"unknown content block type {kind!r}")


def _tool_use(call_id: Any, name: Any, arguments: Any, signature: Any = None) -> ToolUseBlock:
    """A tool call; arguments that are not a JSON object are kept raw, as our loop expects."""
    if isinstance(arguments, Mapping):
        return ToolUseBlock(str(call_id), str(name), dict(arguments), signature=signature)
    raw = "" if arguments is None else str(arguments)
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolUseBlock(str(call_id), str(name), parsed, signature=signature)
    return ToolUseBlock(str(call_id), str(name), {}, raw_arguments=raw, signature=signature)


def _only_results(message: Message) -> bool:
    return message.role == "user" and all(isinstance(b, ToolResultBlock) for b in message.content)


def _timestamp(value: Any) -> float:
    """Epoch seconds from chrono's RFC 3339 text (naive times are taken as UTC) or a number."""
    if isinstance(value, int | float):
        return float(value)
    moment = datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} is not a JSON object")
    return value


def _mtime_ns(meta_path: Path) -> int | None:
    """The newest mtime of the meta file and its message log; None if the file vanished."""
    try:
        newest = meta_path.stat().st_mtime_ns
    except OSError:
        return None
    try:
        return max(newest, meta_path.with_suffix(".jsonl").stat().st_mtime_ns)
    except OSError:
        return newest


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
