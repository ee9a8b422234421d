"""Agent profiles from the command line: listing, ``--agent``, ``default_agent`` and a delegated
run through ``openheim run`` with its transcript stored as a child session."""

from __future__ import annotations

from pathlib import Path

from openheim.store import SQLiteStore
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim

REVIEWER = """+++
description = "Reviews code for bugs."
model = "review-model"
tools = ["read_*"]
max_iterations = 3
+++
You are a meticulous reviewer.
"""
HELPER = """---
description: Says hello
---
You are a cheerful helper.
"""


def profiles(home: Path) -> None:
    (home / "agents").mkdir()
    (home / "agents" / "reviewer.md").write_text(REVIEWER)
    (home / "agents" / "helper.md").write_text(HELPER)


def test_agents_list_and_show(home: Path, work: Path) -> None:
    configure(home, None)
    profiles(home)
    listing = openheim("agents", "list", home=home, cwd=work)
    assert "reviewer: Reviews code for bugs." in listing.stdout
    assert "review-model; read_*" in listing.stdout and "helper: Says hello" in listing.stdout
    shown = openheim("agents", "show", "reviewer", home=home, cwd=work)
    assert "model: review-model" in shown.stdout and "meticulous reviewer" in shown.stdout
    missing = openheim("agents", "show", "nobody", home=home, cwd=work)
    assert missing.returncode == 2 and "unknown agent 'nobody'" in missing.stderr


def test_run_with_an_agent_profile(home: Path, work: Path) -> None:
    profiles(home)
    with FakeLLMServer(["looks fine"]) as server:
        configure(home, server)
        result = openheim("run", "--agent", "reviewer", "review", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    body = server.requests[0].body
    assert body["model"] == "review-model"
    assert body["messages"][0]["content"].startswith("You are a meticulous reviewer.")
    assert {t["function"]["name"] for t in body["tools"]} == {"read_file"}


def test_default_agent_from_config(home: Path, work: Path) -> None:
    profiles(home)
    with FakeLLMServer(["hello!"]) as server:
        configure(home, server)
        text = (home / "config.toml").read_text()
        (home / "config.toml").write_text('default_agent = "helper"\n' + text)
        result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].body["messages"][0]["content"].startswith("You are a cheerful")


def test_delegation_runs_a_subagent_and_stores_its_transcript(home: Path, work: Path) -> None:
    profiles(home)
    delegate = FakeToolCall("delegate_task", {"agent": "helper", "task": "greet the user"})
    replies: list[FakeReply | str] = [
        FakeReply(tool_calls=[delegate]),
        "Hello from the helper!",
        "The helper said hello.",
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        result = openheim("run", "ask the helper", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    main, sub, final = server.requests
    names = {t["function"]["name"] for t in main.body["tools"]}
    assert "delegate_task" in names
    assert sub.body["messages"][0]["content"].startswith("You are a cheerful helper.")
    assert [m["content"] for m in sub.body["messages"][1:]] == ["greet the user"]
    assert "delegate_task" not in {t["function"]["name"] for t in sub.body.get("tools", [])}
    told = next(m for m in final.messages if m.get("role") == "tool")["content"]
    assert "Hello from the helper!" in told
    with SQLiteStore(home / "openheim.db") as store:
        records = store.list()
        child = next(r for r in records if r.parent_id is not None)
        parent = next(r for r in records if r.parent_id is None)
        assert child.parent_id == parent.id and child.title.startswith("[helper]")
        assert [m.text for m in store.messages(child.id)] == [
            "greet the user",
            "Hello from the helper!",
        ]
    shown = openheim("sessions", "show", child.id[:8], home=home, cwd=work)
    assert "greet the user" in shown.stdout
