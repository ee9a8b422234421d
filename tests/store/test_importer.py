"""Importing the Rust Openheim's history: both layouts, both message shapes, once per change."""

from __future__ import annotations

import json
import logging
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.store import SessionNotFound, import_rust_history
from openheim.store.common import SqlStore

OLD = "0b6f4a9e-3c1d-4e8f-9a2b-5c6d7e8f9a01"
NEW = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"

OLD_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are Openheim."},
    {"role": "user", "content": "List the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "execute_command", "arguments": '{"command": "ls"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "x", "arguments": "{oops"}},
        ],
    },
    {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_1", "tool_name": "ls"},
    {
        "role": "tool",
        "content": "bad",
        "tool_call_id": "call_2",
        "tool_name": "x",
        "is_error": True,
    },
    {"role": "assistant", "content": "There are two files."},
]

OLD_EXPECTED = [
    Message.user("List the files"),
    Message(
        "assistant",
        (
            ToolUseBlock("call_1", "execute_command", {"command": "ls"}),
            ToolUseBlock("call_2", "x", {}, raw_arguments="{oops"),
        ),
    ),
    Message(
        "user", (ToolResultBlock("call_1", "a.txt\nb.txt"), ToolResultBlock("call_2", "bad", True))
    ),
    Message.assistant("There are two files."),
]

NEW_MESSAGES: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Describe this"},
            {"type": "image", "data": "aGk=", "mime_type": "image/png"},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me look.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "ENCRYPTED"},
            {"type": "text", "text": ""},
            {
                "type": "tool_use",
                "id": "t1",
                "name": "read_file",
                "arguments": '{"path": "a.txt"}',
                "signature": "g",
            },
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool_result",
                "tool_call_id": "t1",
                "tool_name": "read_file",
                "content": "hello",
            }
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "It says hello."}]},
]

NEW_EXPECTED = [
    Message("user", (TextBlock("Describe this"), ImageBlock("aGk=", "image/png"))),
    Message(
        "assistant",
        (
            ThinkingBlock("Let me look.", signature="sig-1"),
            ThinkingBlock("", signature="ENCRYPTED", redacted=True),
            ToolUseBlock("t1", "read_file", {"path": "a.txt"}, signature="g"),
        ),
    ),
    Message("user", (ToolResultBlock("t1", "hello"),)),
    Message.assistant("It says hello."),
]


def write_old(folder: Path, session_id: str = OLD, **meta: Any) -> Path:
    body = {
        "meta": {
            "id": session_id,
            "created_at": "2025-03-01T10:00:00.123456789Z",
            "updated_at": "2025-03-01T10:05:00Z",
            "model": "gpt-4o",
            "provider": "openai",
            "title": "List the files",
            "skills": ["rust"],
            **meta,
        },
        "messages": OLD_MESSAGES,
    }
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")
    return path


def write_new(folder: Path, session_id: str = NEW, *, torn: bool = True) -> Path:
    meta = {
        "id": session_id,
        "created_at": "2025-04-02T08:00:00+00:00",
        "updated_at": "2025-04-02T08:30:00.5+00:00",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "cwd": "/home/me/project",
        "context_usage": {"input_tokens": 10, "output_tokens": 5},
    }
    lines = [json.dumps(m) for m in NEW_MESSAGES]
    if torn:
        lines.append('{"role":"user","conte')
    (folder / f"{session_id}.jsonl").write_text("\n".join(lines), encoding="utf-8")
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps({"meta": meta}), encoding="utf-8")
    return path


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def history(tmp_path: Path) -> Path:
    folder = tmp_path / "history"
    folder.mkdir()
    return folder


def test_both_layouts_are_imported_with_their_metadata(store: SqlStore, history: Path) -> None:
    write_old(history)
    write_new(history)
    assert import_rust_history(store, history) == 2

    old = store.get(OLD)
    assert (old.title, old.model, old.provider, old.skills, old.cwd) == (
        "List the files",
        "gpt-4o",
        "openai",
        ["rust"],
        "",
    )
    assert old.created_at == pytest.approx(epoch("2025-03-01T10:00:00.123456"))
    assert old.updated_at == epoch("2025-03-01T10:05:00")
    assert store.messages(OLD) == OLD_EXPECTED
    assert old.message_count == len(OLD_EXPECTED)

    new = store.get(NEW)
    assert (new.title, new.cwd, new.provider) == ("Describe this", "/home/me/project", "anthropic")
    assert new.updated_at == epoch("2025-04-02T08:30:00.5")
    assert store.messages(NEW) == NEW_EXPECTED
    assert [r.id for r in store.list()] == [NEW, OLD]


def test_a_second_run_skips_everything_and_originals_are_untouched(
    store: SqlStore, history: Path
) -> None:
    files = [write_old(history), write_new(history)]
    files.append(history / f"{NEW}.jsonl")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    assert import_rust_history(store, history) == 2
    assert import_rust_history(store, history) == 0
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before


def test_malformed_files_are_skipped_with_one_warning_each(
    store: SqlStore, history: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_old(history)
    bad = {
        "not-json": "{nope",
        "no-meta": json.dumps({"messages": []}),
        "bad-role": json.dumps(
            {"meta": {"id": "x", "created_at": 0}, "messages": [{"role": "bot"}]}
        ),
        "bad-id": json.dumps({"meta": {"id": "nope", "created_at": 0}}),
        "bad-block": json.dumps(
            {
                "meta": {"id": str(uuid.uuid4()), "created_at": 0},
                "messages": [{"role": "user", "content": [{"type": "audio"}]}],
            }
        ),
    }
    for _, text in bad.items():
        (history / f"{uuid.uuid4()}.json").write_text(text, encoding="utf-8")
    broken_log = write_new(history, str(uuid.uuid4()), torn=False)
    broken_log.with_suffix(".jsonl").write_text(
        '{"role": "user", "conte\n{"role":"user","content":"x"}'
    )
    (history / "settings.json").write_text("{}")  # not a session file: ignored silently
    (history / f"{OLD}.lock").write_text("{}")

    with caplog.at_level(logging.WARNING):
        assert import_rust_history(store, history) == 1
    assert caplog.text.count("skipping Rust Openheim history file") == len(bad) + 1
    assert "settings.json" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert import_rust_history(store, history) == 0
    assert caplog.text == ""
    assert [r.id for r in store.list()] == [OLD]


def test_a_fixed_file_is_imported_once_its_mtime_changes(store: SqlStore, history: Path) -> None:
    path = history / f"{OLD}.json"
    path.write_text("{broken", encoding="utf-8")
    assert import_rust_history(store, history) == 0
    write_old(history)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert import_rust_history(store, history) == 1


def touch_later(path: Path) -> None:
    stamp = path.stat().st_mtime_ns + 10**9
    os.utime(path, ns=(stamp, stamp))


def test_a_file_changed_by_rust_replaces_an_untouched_import(
    store: SqlStore, history: Path
) -> None:
    write_old(history)
    import_rust_history(store, history)
    write_old(history, title="Renamed in Rust", updated_at="2025-03-02T00:00:00Z")
    touch_later(history / f"{OLD}.json")
    assert import_rust_history(store, history) == 1
    assert store.get(OLD).title == "Renamed in Rust"
    assert store.messages(OLD) == OLD_EXPECTED


def test_a_session_continued_here_is_not_overwritten(store: SqlStore, history: Path) -> None:
    write_old(history)
    import_rust_history(store, history)
    store.append(OLD, Message.user("continued in python"))
    write_old(history, title="Renamed in Rust")
    touch_later(history / f"{OLD}.json")
    assert import_rust_history(store, history) == 0
    assert store.get(OLD).title == "List the files"
    assert store.messages(OLD)[-1] == Message.user("continued in python")


def test_a_session_deleted_here_stays_deleted(store: SqlStore, history: Path) -> None:
    write_old(history)
    import_rust_history(store, history)
    store.delete(OLD)
    touch_later(history / f"{OLD}.json")
    assert import_rust_history(store, history) == 0
    with pytest.raises(SessionNotFound):
        store.get(OLD)


def test_a_missing_title_comes_from_the_first_prompt(store: SqlStore, history: Path) -> None:
    write_old(history, title=None, created_at="2025-03-01T10:00:00")  # naive: taken as UTC
    import_rust_history(store, history)
    assert store.get(OLD).title == "List the files"
    assert store.get(OLD).created_at == epoch("2025-03-01T10:00:00")


def test_a_dangling_rust_tool_call_is_repaired_on_load(store: SqlStore, history: Path) -> None:
    path = write_old(history)
    body = json.loads(path.read_text())
    body["messages"] = OLD_MESSAGES[:3]
    path.write_text(json.dumps(body))
    import_rust_history(store, history)
    last = store.messages(OLD)[-1]
    assert [b.tool_use_id for b in last.content if isinstance(b, ToolResultBlock)] == [
        "call_1",
        "call_2",
    ]


def test_no_history_folder_imports_nothing(store: SqlStore, tmp_path: Path) -> None:
    assert import_rust_history(store, tmp_path / "missing") == 0
