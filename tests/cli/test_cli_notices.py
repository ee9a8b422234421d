"""``openheim run``: a session's notices as events (text on stderr, JSON lines on stdout), and a
``--json`` stdout that holds nothing but documented events, whether the run ends, fails or
never starts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from openheim.events import EVENT_TYPES
from openheim.testing import FakeLLMServer
from tests.cli.test_cli import configure, openheim

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BROKEN_MCP = '\n[mcp_servers.broken]\ncommand = "/nonexistent/openheim-test-server"\n'


def events_of(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line as an event; fails on a line that is not JSON or not a documented
    event type."""
    events = []
    for line in stdout.splitlines():
        event = json.loads(line)
        assert isinstance(event, dict) and event.get("type") in EVENT_TYPES, line
        events.append(event)
    return events


def documented_types() -> set[str]:
    """The types of the ``--json`` events table in docs/cli.md."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("### `--json` events") : text.index("A notice's `kind`")]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))


def test_every_event_type_is_documented() -> None:
    assert documented_types() == EVENT_TYPES


@pytest.fixture
def planted(home: Path, work: Path) -> Path:
    """An untrusted project config that tries to widen a limit, and a user system prompt (so
    the only notices are the ones planted)."""
    (home / "system.md").write_text("You are a test agent.\n")
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text("max_iterations = 500\n")
    return work


def test_text_mode_writes_the_session_and_its_notices_to_stderr(home: Path, planted: Path) -> None:
    with FakeLLMServer(["done"]) as server:
        configure(home, server, extra=BROKEN_MCP)
        result = openheim("run", "hi", home=home, cwd=planted)
    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("openheim: session ")
    assert [line.split(":")[1].split()[0] for line in lines[1:3]] == ["ignored", "MCP"]
    assert lines[1].startswith("openheim: ignored max_iterations = 500")
    assert lines[2].startswith("openheim: MCP server 'broken' is unavailable: ")
    assert len(lines) == 3, result.stderr  # each said once


def test_json_mode_gives_them_as_events_on_stdout(home: Path, planted: Path) -> None:
    with FakeLLMServer(["done"]) as server:
        configure(home, server, extra=BROKEN_MCP)
        result = openheim("run", "--json", "hi", home=home, cwd=planted)
    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    assert [e["type"] for e in events[:3]] == ["session_started", "notice", "notice"]
    assert events[0]["resumed"] is False and events[0]["cwd"] == str(planted)
    trust, mcp = events[1], events[2]
    assert (trust["kind"], trust["level"]) == ("trust", "warning")
    assert trust["message"].startswith("ignored max_iterations = 500")
    assert (mcp["kind"], mcp["level"]) == ("mcp", "warning")
    assert mcp["message"].startswith("MCP server 'broken' is unavailable: ")
    assert sum(e["type"] == "notice" for e in events) == 2
    assert events[-1]["type"] == "finished"
    assert "ignored" not in result.stderr and "MCP" not in result.stderr


def test_an_error_before_the_session_is_a_failed_event(home: Path, planted: Path) -> None:
    with FakeLLMServer([]) as server:
        configure(home, server)
        result = openheim("run", "--json", "--session", "nosuch", "hi", home=home, cwd=planted)
    assert result.returncode == 2, result.stderr
    events = events_of(result.stdout)
    assert [e["type"] for e in events] == ["notice", "failed"]  # the settings' notice still
    failed = events[-1]
    assert (failed["error"], failed["exit_code"]) == ("SessionNotFound", 2)
    assert "nosuch" in failed["message"]
    assert result.stderr.splitlines()[-1].startswith("openheim: error: ")
    assert server.requests == []


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--json", "--approve", "sometimes", "hi"),
        ("run", "--json", "--max-iterations", "0", "hi"),
        ("run", "--json", "--tools", "nosuchtool", "hi"),
    ],
    ids=["bad flag value", "bad number", "bad tool pattern"],
)
def test_bad_arguments_print_one_failed_event(
    home: Path, work: Path, args: tuple[str, ...]
) -> None:
    configure(home, None)
    result = openheim(*args, home=home, cwd=work)
    assert result.returncode == 2, result.stderr
    [failed] = events_of(result.stdout)
    assert failed["type"] == "failed" and failed["exit_code"] == 2 and failed["message"]
    errors = [line for line in result.stderr.splitlines() if line.startswith("openheim: error:")]
    assert len(errors) == 1


def test_a_failing_provider_ends_the_events_with_failed(home: Path, work: Path) -> None:
    configure(home, None)  # nothing listens on the provider's port
    result = openheim("run", "--json", "--no-session", "hi", home=home, cwd=work)
    assert result.returncode == 1, result.stderr
    events = events_of(result.stdout)
    assert events[0]["type"] == "session_started" and events[0]["session_id"] is None
    assert events[-1]["type"] == "failed" and events[-1]["exit_code"] == 1
    assert events[-1]["error"] == "ProviderUnavailable"
    assert not any(e["type"] == "finished" for e in events)
