"""A lone surrogate in model output (valid JSON ``\\ud800``, not encodable as UTF-8) is stored
without a crash: the message body keeps it exactly, the search index gets a replacement char."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from openheim.messages import Message, TextBlock
from openheim.store.common import SqlStore
from openheim.store.sqlite import DB_NAME
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import configure, openheim

LONE = "half \ud800 a pair"


def test_a_lone_surrogate_in_the_answer_is_stored_and_the_run_succeeds(
    home: Path, work: Path
) -> None:
    with FakeLLMServer([FakeReply(text=LONE)]) as server:
        configure(home, server)
        result = openheim("run", "say it", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "UnicodeEncodeError" not in result.stderr
    with sqlite3.connect(home / DB_NAME) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM messages")]
        indexed = [row[0] for row in conn.execute("SELECT text FROM messages_fts")]
    conn.close()
    assert any("\\ud800" in body for body in bodies)  # kept exactly, as a JSON escape
    assert "half \ufffd a pair" in indexed  # the search index gets a replacement char
    session_id = openheim("sessions", "list", home=home, cwd=work).stdout.split()[0]
    for fmt in ("json", "md"):
        out = work / f"export.{fmt}"
        result = openheim(
            "sessions", "export", session_id, "--format", fmt, "-o", str(out), home=home, cwd=work
        )
        assert result.returncode == 0, result.stderr
        assert "half" in out.read_text(encoding="utf-8")
    exported = json.loads((work / "export.json").read_text(encoding="utf-8"))
    assert LONE in json.dumps(exported, ensure_ascii=False)  # the JSON export is lossless


def test_the_stored_message_reads_back_unchanged(store: SqlStore) -> None:
    record = store.create(cwd="/w", provider="p", model="m", title="t \udfff")
    store.append(record.id, Message(role="assistant", content=(TextBlock(text=LONE),)))
    assert store.messages(record.id)[-1].content == (TextBlock(text=LONE),)
    assert store.get(record.id).title == "t \ufffd"
    assert store.search("half")  # and it is found
