"""Secrets stay out of every sink: a planted key read by file and shell tools, and echoed in an
error, never reaches the model's next request, the ``--json`` stream, stderr (debug logs and the
traceback included), the SQLite rows or an export. The CLI runs as a subprocess against
``FakeLLMServer`` on loopback; the renderers and the log formatter are also checked directly.
"""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openheim.events import Event, Finished, TextDelta, ToolCall, ToolResult
from openheim.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    tool_results_message,
)
from openheim.process.logs import register_secret, setup_logging
from openheim.redaction.secrets import REDACTED
from openheim.runtime.history import PersistentHistory
from openheim.store import SQLiteStore
from openheim.store.export import export_json, export_markdown
from openheim.term.render import JsonRenderer, TextRenderer
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim

KEY = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0"
CUSTOM = "custom-Registered-Value-7f3a9c"
"""The fake provider's ``api_key``: a secret only because config resolution registers it."""
DOTENV = "dotenv-planted-value-c0ffee"
"""In ``.env``, which no tool may read: it must not appear anywhere at all."""
PLANTED = (KEY, CUSTOM, DOTENV)


def assert_clean(text: str, where: str) -> None:
    for secret in PLANTED:
        assert secret not in text, f"{secret[:12]}... leaked into {where}"


TOOL_ROUND = FakeReply(
    tool_calls=[
        FakeToolCall("read_file", {"path": "notes.txt"}),
        FakeToolCall("read_file", {"path": ".env"}),
        FakeToolCall("search", {"pattern": "key|password|DB_"}),
        FakeToolCall("execute_command", {"command": "cat notes.txt"}),
        FakeToolCall("execute_command", {"command": "cat notes.txt >&2; exit 3"}),
    ]
)
ECHOING_ERROR = FakeReply(
    status=400,
    error_body=f"invalid request: key {KEY} and {CUSTOM} are not allowed",
    headers={"x-echo": f"{KEY} {CUSTOM}"},
)
"""The provider's answer to the round of results: an error that echoes the secrets in its body
(they reach the CLI's error line and the traceback) and in a header (the debug log)."""


@dataclass(frozen=True)
class Run:
    """One ``openheim --debug run --json --allow-shell`` over the planted work dir."""

    home: Path
    work: Path
    result: subprocess.CompletedProcess[str]
    server: FakeLLMServer


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    (work / "notes.txt").write_text(f"deploy key: {KEY}\nservice password: {CUSTOM}\n")
    (work / ".env").write_text(f"DB_PASSWORD={DOTENV}\n")
    with FakeLLMServer([TOOL_ROUND, ECHOING_ERROR]) as server:
        configure(home, server, extra=f'api_key = "{CUSTOM}"\n')
        result = openheim(
            "--debug",
            "run",
            "--json",
            "--allow-shell",
            "--approve",
            "auto",
            "go",
            home=home,
            cwd=work,
            OPENHEIM_LOG="debug",
        )
        server.assert_done()
    yield Run(home, work, result, server)


def test_the_model_sees_redacted_results_and_refusals(run: Run) -> None:
    assert run.result.returncode == 1, run.result.stderr
    follow_up = run.server.requests[1]
    assert follow_up.headers["authorization"] == f"Bearer {CUSTOM}"
    assert_clean(follow_up.raw_body.decode(), "the model's next request")
    results = [m["content"] for m in follow_up.messages if m["role"] == "tool"]
    assert len(results) == 5
    assert results[0] == f"deploy key: {REDACTED}\nservice password: {REDACTED}\n"
    assert "refused: .env matches the secret pattern '.env*'" in results[1]
    assert "[skipped 1 file matching secret patterns; never shown]" in results[2]
    assert results[2].count(REDACTED) == 2
    assert results[3].count(REDACTED) == 2
    assert "exit code: 3" in results[4] and results[4].count(REDACTED) == 2


def test_json_stream_and_stderr_are_clean(run: Run) -> None:
    assert_clean(run.result.stdout, "the --json stream")
    events = [json.loads(line) for line in run.result.stdout.splitlines()]
    shown = [e["content"] for e in events if e["type"] == "tool_result"]
    assert len(shown) == 5 and sum(REDACTED in content for content in shown) == 4
    error = events[-1]
    assert error["type"] == "failed" and f"key {REDACTED} and " in error["message"]
    assert (error["error"], error["exit_code"]) == ("ProviderHTTPError", 1)
    stderr = run.result.stderr
    assert_clean(stderr, "stderr")
    assert "Traceback" in stderr and " DEBUG " in stderr
    assert f"invalid request: key {REDACTED} and " in stderr.splitlines()[-1]
    assert f"{REDACTED} {REDACTED}" in stderr, "the echoed header reached no debug log line"


def test_the_store_and_exports_are_clean(run: Run) -> None:
    session = json.loads(run.result.stdout.splitlines()[0])
    assert session["type"] == "session_started"
    dump = table_dump(run.home / "openheim.db")
    assert_clean(dump, "the session store")
    assert dump.count(REDACTED) >= 6
    for fmt in ("md", "json"):
        export = openheim(
            "sessions",
            "export",
            session["session_id"],
            "--format",
            fmt,
            home=run.home,
            cwd=run.work,
        )
        assert export.returncode == 0, export.stderr
        assert_clean(export.stdout, f"the {fmt} export")
        assert f"deploy key: {REDACTED}" in export.stdout.replace("\\n", "\n")


# --- the sinks one by one ------------------------------------------------------------------------


def test_renderers_redact_what_they_write() -> None:
    register_secret(CUSTOM)
    out, err = io.StringIO(), io.StringIO()
    text = TextRenderer(out, err)
    json_out = io.StringIO()
    as_json = JsonRenderer(json_out)
    events: list[Event] = [
        TextDelta(f"the key is {KEY}"),
        ToolCall("c1", "read_file", {"path": f"{CUSTOM}.txt"}, "read"),
        ToolCall("c2", "execute_command", {"command": "x" * 100 + CUSTOM}, "execute"),
        ToolResult("c1", "read_file", f"no such file {CUSTOM}.txt", True, "failed"),
        Finished("max_tokens", f"stopped near {KEY}", Usage(), f"answer {KEY}"),
    ]
    for event in events:
        text(event)
        as_json(event)
    for sink, written in (("stdout", out), ("stderr", err), ("--json", json_out)):
        assert_clean(written.getvalue(), sink)
    assert f'→ read_file {{"path": "{REDACTED}.txt"}}' in err.getvalue()
    assert f"failed: no such file {REDACTED}.txt" in err.getvalue()
    assert CUSTOM[:8] not in err.getvalue(), "a secret cut short by the 120-character limit"
    assert json_out.getvalue().count(REDACTED) == 6


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_the_log_file_is_redacted(root_logger: logging.Logger, tmp_path: Path) -> None:
    register_secret(CUSTOM)
    log_file = tmp_path / "logs" / "openheim.log"
    setup_logging("debug", log_file=log_file)
    log = logging.getLogger("openheim.test")
    log.debug("calling with key=%s", KEY)
    try:
        raise RuntimeError(f"server said: {CUSTOM}")
    except RuntimeError:
        log.warning("request failed", exc_info=True)
    written = log_file.read_text()
    assert_clean(written, "the log file")
    assert f"key={REDACTED}" in written and f"RuntimeError: server said: {REDACTED}" in written


def secret_message() -> Message:
    """An assistant message with a secret in every kind of block text."""
    return Message(
        "assistant",
        (
            TextBlock(f"use {KEY}"),
            ThinkingBlock(f"the password is {CUSTOM}", signature="sig"),
            ToolUseBlock("c1", "execute_command", {"command": f"login {CUSTOM}"}),
        ),
    )


def table_dump(path: Path) -> str:
    """Every row of every table of an SQLite file, as text."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for t in tables for row in db.execute(f'SELECT * FROM "{t}"'))


def test_the_history_stores_a_redacted_copy(tmp_path: Path) -> None:
    register_secret(CUSTOM)
    with SQLiteStore(tmp_path / "s.db") as store:
        record = store.create(cwd=str(tmp_path), provider="p", model="m")
        history = PersistentHistory(store, record.id, [])
        history.append(Message.user(f"my key is {KEY}"))
        history.append(secret_message())
        stored = store.messages(record.id)
    assert history[0].text == f"my key is {KEY}", "the model still sees what the user wrote"
    dump = table_dump(tmp_path / "s.db")
    assert_clean(dump, "the session store")
    assert stored[0].text == f"my key is {REDACTED}"
    thinking = stored[1].content[1]
    assert isinstance(thinking, ThinkingBlock) and thinking.signature is None


def test_exports_redact_what_was_stored_before(tmp_path: Path) -> None:
    register_secret(CUSTOM)
    with SQLiteStore(tmp_path / "s.db") as store:
        record = store.create(cwd=str(tmp_path), provider="p", model="m", title=f"about {KEY}")
        store.append(record.id, secret_message())
        store.append(record.id, tool_results_message([ToolResultBlock("c1", f"ok {CUSTOM}")]))
        assert KEY in table_dump(tmp_path / "s.db"), "the raw store holds the secret"
        markdown = export_markdown(store, record.id, system_prompt=f"key {KEY}")
        document = export_json(store, record.id)
    for text, where in ((markdown, "the Markdown export"), (document, "the JSON export")):
        assert_clean(text, where)
        assert text.count(REDACTED) >= 4
    assert json.loads(document)["session"]["title"] == f"about {REDACTED}"
