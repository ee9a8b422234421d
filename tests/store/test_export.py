"""Export: JSON that round-trips through import_json, and Markdown that reads like the session."""

from __future__ import annotations

import json

import pytest

from openheim.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from openheim.store import SessionExists, export_json, export_markdown, import_json
from openheim.store.common import SqlStore
from openheim.store.export import InvalidExport, fenced
from openheim.store.sqlite import SQLiteStore

CONVERSATION = [
    Message.user("Why does the build fail?", ImageBlock("aGVsbG8=", "image/png")),
    Message(
        "assistant",
        (
            ThinkingBlock("The log will tell.", signature="sig"),
            ThinkingBlock("", signature="enc", redacted=True),
            TextBlock("Let me read the log."),
            ToolUseBlock("c1", "read_file", {"path": "build.log", "limit": 20}),
            ToolUseBlock("c2", "shell", {}, raw_arguments="{broken"),
        ),
    ),
    Message(
        "user",
        (
            ToolResultBlock("c1", "error: missing ```semicolon```"),
            ToolResultBlock("c2", "arguments are not JSON", is_error=True),
        ),
    ),
    Message.assistant("A semicolon is missing on line 3."),
]


@pytest.fixture
def session_id(store: SqlStore) -> str:
    parent = store.create(cwd="/p", provider="p", model="m").id
    record = store.create(
        cwd="/home/me/app",
        provider="anthropic",
        model="claude-sonnet-4-5",
        skills=["rust"],
        parent_id=parent,
    )
    for message in CONVERSATION:
        store.append(record.id, message)
    store.update(record.id, usage=Usage(1200, 340, 50, 0), cost=0.0123)
    return record.id


def test_json_export_round_trips(store: SqlStore, session_id: str) -> None:
    record = store.get(session_id)
    text = export_json(store, session_id[:8])
    document = json.loads(text)
    assert (document["format"], document["version"]) == ("openheim.session", 1)
    assert document["session"]["usage"] == Usage(1200, 340, 50, 0).to_dict()

    store.delete(session_id)
    restored = import_json(store, text)
    assert restored == record
    assert store.get(session_id) == record
    assert store.messages(session_id) == CONVERSATION
    assert export_json(store, session_id) == text


def test_json_import_into_another_store_drops_an_unknown_parent(
    store: SqlStore, session_id: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = export_json(store, session_id)
    with SQLiteStore(tmp_path_factory.mktemp("other") / "db") as other:
        restored = import_json(other, text)
        assert restored.parent_id is None
        assert other.messages(session_id) == CONVERSATION
        assert [h.session_id for h in other.search("semicolon")] == [session_id]


def test_json_import_refuses_to_overwrite_unless_asked(store: SqlStore, session_id: str) -> None:
    text = export_json(store, session_id)
    with pytest.raises(SessionExists):
        import_json(store, text)
    store.append(session_id, Message.user("more"))
    import_json(store, text, replace=True)
    assert store.messages(session_id) == CONVERSATION


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        json.dumps({"format": "something else"}),
        json.dumps({"format": "openheim.session", "version": 2}),
        json.dumps({"format": "openheim.session", "version": 1, "session": {}, "messages": []}),
    ],
)
def test_json_import_rejects_other_documents(store: SqlStore, text: str) -> None:
    with pytest.raises(InvalidExport, match="not an openheim session export"):
        import_json(store, text)


def test_markdown_has_the_facts_and_the_whole_conversation(
    store: SqlStore, session_id: str
) -> None:
    text = export_markdown(store, session_id, system_prompt="You are openheim.")
    assert text.startswith("# Why does the build fail?\n")
    for fact in (
        f"- **Session:** `{session_id}`",
        "- **Model:** claude-sonnet-4-5",
        "- **Provider:** anthropic",
        "- **Directory:** `/home/me/app`",
        "- **Skills:** rust",
        "- **Cost:** $0.0123",
        "- **Tokens:** 1,200 in, 340 out, 50 read from cache\n",
        "- **Forked from:** `",
    ):
        assert fact in text, fact
    assert "## System prompt\n\n```text\nYou are openheim.\n```" in text
    assert "### User\n\nWhy does the build fail?" in text
    assert "*[image: image/png, 5 bytes]*" in text
    assert "<details><summary>Thinking</summary>\n\nThe log will tell.\n\n</details>" in text
    assert "Thinking (redacted by the provider)" in text
    assert "**Tool call** `read_file` (`c1`)\n\n```json\n{\n" in text
    assert '"path": "build.log"' in text
    assert "**Tool call** `shell` (`c2`)\n\n```text\n{broken\n```" in text
    assert (
        "**Result** of `read_file` (`c1`)\n\n````text\nerror: missing ```semicolon```\n````" in text
    )
    assert "**Error** from `shell` (`c2`)\n\n```text\narguments are not JSON\n```" in text
    assert text.rstrip().endswith("### Assistant\n\nA semicolon is missing on line 3.")
    order = [text.index(s) for s in ("## System prompt", "### User", "read_file", "A semicolon")]
    assert order == sorted(order)


def test_markdown_of_a_bare_session(store: SqlStore) -> None:
    sid = store.create(cwd="", provider="", model="").id
    text = export_markdown(store, sid)
    assert text.startswith("# Untitled session\n")
    assert "System prompt" not in text and "Cost" not in text and "Tokens" not in text
    assert text.rstrip().endswith("## Conversation")


def test_fences_outgrow_backticks_inside() -> None:
    assert fenced("a", "text") == "```text\na\n```"
    assert fenced("x ````` y", "") == "``````\nx ````` y\n``````"
