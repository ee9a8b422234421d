"""Export a session as JSON (round-trippable through ``import_json``) or as Markdown to read.

Both are redacted (``openheim.redaction.secrets``): sessions stored before redaction existed, or
imported from Rust Openheim history, may still hold secrets.

The JSON document is ``{"format": "openheim.session", "version": 1, "session": {...},
"messages": [...]}`` with the record's fields and each message as ``Message.to_dict`` gives it,
so nothing a provider needs (signatures, call ids, raw arguments) is lost.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from openheim.errors import InvalidExport as InvalidExport
from openheim.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from openheim.redaction.secrets import redact, redact_data, redact_message
from openheim.store.base import SessionRecord, SessionStore
from openheim.store.tables import storable

FORMAT = "openheim.session"
VERSION = 1


def export_json(store: SessionStore, session_id: str) -> str:
    """The session (record and every message) as an indented JSON document."""
    record = store.get(session_id)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "session": redact_data(dataclasses.asdict(record)),
        "messages": [redact_message(m).to_dict() for m in store.messages(record.id)],
    }
    text = json.dumps(document, ensure_ascii=False, indent=2)
    if storable(text) != text:  # a lone surrogate: escaped (all non-ASCII), so still lossless
        text = json.dumps(document, indent=2)
    return text + "\n"


def import_json(store: SessionStore, text: str, *, replace: bool = False) -> SessionRecord:
    """Recreate a session from ``export_json`` output, same id; returns it as stored.

    Raises ``InvalidExport`` for anything else, ``SessionExists`` when the id is taken and
    ``replace`` is false.
    """
    try:
        document = json.loads(text)
        _check_format(document)
        messages = [Message.from_dict(m) for m in document["messages"]]
        record = _record(document["session"], len(messages))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidExport(
            f"not an openheim session export: {exc}",
            hint="pass a file written by `openheim sessions export --format json`",
        ) from exc
    return store.restore(record, messages, replace=replace)


def _check_format(document: Any) -> None:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"the format is not {FORMAT!r}")
    if document.get("version") != VERSION:
        raise ValueError(f"version {document.get('version')!r} (this openheim reads {VERSION})")


def _record(data: Mapping[str, Any], message_count: int) -> SessionRecord:
    cost = data.get("cost")
    parent = data.get("parent_id")
    return SessionRecord(
        id=str(uuid.UUID(data["id"])),
        title=str(data["title"]),
        cwd=str(data["cwd"]),
        provider=str(data["provider"]),
        model=str(data["model"]),
        skills=[str(s) for s in data["skills"]],
        created_at=float(data["created_at"]),
        updated_at=float(data["updated_at"]),
        usage=Usage(**{k: int(v) for k, v in data.get("usage", {}).items()}),
        cost=None if cost is None else float(cost),
        parent_id=None if parent is None else str(parent),
        message_count=message_count,
    )


def export_markdown(
    store: SessionStore, session_id: str, *, system_prompt: str | None = None
) -> str:
    """The session to read: its facts, the system prompt, then the whole conversation.

    Thinking is folded into ``<details>``, each tool call shows its arguments as JSON and its
    result below it, and failed calls are marked **Error**.
    """
    record = store.get(session_id)
    parts = [redact(_header(record))]
    if system_prompt:
        parts.append("## System prompt\n\n" + fenced(redact(system_prompt), "text"))
    parts.append("## Conversation")
    names: dict[str, str] = {}
    for message in store.messages(record.id):
        parts.extend(_message(redact_message(message), names))
    return "\n\n".join(parts) + "\n"


def _header(record: SessionRecord) -> str:
    facts = [
        ("Session", f"`{record.id}`"),
        ("Model", record.model or "unknown"),
        ("Provider", record.provider or "unknown"),
        ("Directory", f"`{record.cwd}`" if record.cwd else "unknown"),
        ("Created", _when(record.created_at)),
        ("Updated", _when(record.updated_at)),
        ("Messages", str(record.message_count)),
    ]
    if record.parent_id:
        facts.append(("Forked from", f"`{record.parent_id}`"))
    if record.skills:
        facts.append(("Skills", ", ".join(record.skills)))
    if record.usage.total_tokens:
        facts.append(("Tokens", _tokens(record.usage)))
    if record.cost is not None:
        facts.append(("Cost", f"${record.cost:.4f}"))
    lines = "\n".join(f"- **{name}:** {value}" for name, value in facts)
    return f"# {record.title or 'Untitled session'}\n\n{lines}"


def _message(message: Message, names: dict[str, str]) -> Iterator[str]:
    """The Markdown parts of one message; ``names`` maps call ids to tool names as we go."""
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    for result in results:
        yield _result(result, names.get(result.tool_use_id, "tool"))
    rest = [b for b in message.content if not isinstance(b, ToolResultBlock)]
    if not rest:
        return
    yield "### User" if message.role == "user" else "### Assistant"
    for block in rest:
        if isinstance(block, ToolUseBlock):
            names[block.id] = block.name
        yield _block(block)


def _block(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        if block.redacted:
            return "<details><summary>Thinking (redacted by the provider)</summary></details>"
        return f"<details><summary>Thinking</summary>\n\n{block.thinking}\n\n</details>"
    if isinstance(block, ImageBlock):
        size = len(block.data) * 3 // 4 - block.data[-2:].count("=")
        return f"*[image: {block.mime_type}, {size:,} bytes]*"
    if isinstance(block, ToolUseBlock):
        return _call(block)
    return _result(block, "tool")


def _call(block: ToolUseBlock) -> str:
    head = f"**Tool call** `{block.name}` (`{block.id}`)"
    if block.raw_arguments is not None:
        body = fenced(block.raw_arguments, "text")
    else:
        body = fenced(json.dumps(dict(block.arguments), ensure_ascii=False, indent=2), "json")
    note = f"\n\n**Error:** {block.error}" if block.error else ""
    return f"{head}\n\n{body}{note}"


def _result(block: ToolResultBlock, name: str) -> str:
    label = "**Error** from" if block.is_error else "**Result** of"
    images = "".join(f"\n\n*(image: {i.mime_type})*" for i in block.images)
    return f"{label} `{name}` (`{block.tool_use_id}`)\n\n{fenced(block.content, 'text')}{images}"


def fenced(text: str, language: str) -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _tokens(usage: Usage) -> str:
    text = f"{usage.input_tokens:,} in, {usage.output_tokens:,} out"
    if usage.cache_read_tokens:
        text += f", {usage.cache_read_tokens:,} read from cache"
    if usage.cache_write_tokens:
        text += f", {usage.cache_write_tokens:,} written to cache"
    return text
