"""End to end: ``openheim`` as a subprocess against FakeLLMServer on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openheim.events import EVENT_TYPES
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest

SECRET = "sk-test-secret-0123456789"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "notes.txt").write_text("the secret word is pineapple\n")
    return path


def configure(home: Path, server: FakeLLMServer | None, *, extra: str = "") -> None:
    base = server.base_url if server else "http://127.0.0.1:9/v1"
    (home / "config.toml").write_text(
        f'default_provider = "fake"\n[providers.fake]\napi_base = "{base}"\n'
        f'default_model = "fake-model"\n{extra}'
    )


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env = {k: v for k, v in env.items() if not k.startswith("OPENHEIM_")}
    return {**env, "OPENHEIM_HOME": str(home), **extra}


def openheim(
    *args: str, home: Path, cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openheim", *args],
        cwd=cwd,
        env=env_for(home, **env),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # no controlling terminal: approvals are headless
    )


def start_run(home: Path, work: Path, *args: str) -> subprocess.Popen[str]:
    """``openheim run ARGS`` in the background, in a session of its own (no terminal), with its
    output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "openheim", "run", *args],
        cwd=work,
        env=env_for(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def user_text(request: RecordedRequest) -> str:
    return str(request.messages[-1]["content"])


def test_plain_answer_streams_to_stdout(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="Hello there, friend.")]) as server:
        configure(home, server)
        result = openheim("run", "say", "hello", home=home, cwd=work)
        server.assert_done()
    assert (result.returncode, result.stdout) == (0, "Hello there, friend.\n")
    body = server.requests[0].body
    assert body["model"] == "fake-model" and body["stream"] is True
    assert user_text(server.requests[0]) == "say hello"
    assert body["messages"][0]["role"] == "system"


def test_read_file_tool_loop(home: Path, work: Path) -> None:
    def answer(request: RecordedRequest) -> FakeReply:
        return FakeReply(text=f"The file says: {request.last_tool_result}")

    replies: list[Any] = [
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})]),
        answer,
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        result = openheim("run", "what is the secret word?", home=home, cwd=work)
        server.assert_done()
    assert result.returncode == 0, result.stderr
    assert "pineapple" in result.stdout
    assert "→ read_file" in result.stderr and "pineapple" not in result.stderr
    tools = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert {"read_file", "write_file", "edit_file", "search"} <= tools
    assert "execute_command" not in tools


def test_json_prints_one_event_per_line(home: Path, work: Path) -> None:
    replies: list[Any] = [
        FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": "."})]),
        FakeReply(text="One file."),
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        result = openheim("run", "--json", "list", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert set(types) <= EVENT_TYPES  # nothing but documented events
    assert types[0] == "session_started" and types[-1] == "finished"
    started = events[0]
    assert len(started["session_id"]) == 36 and started["messages"] == 0
    assert (started["model"], started["cwd"], started["resumed"]) == (
        "fake-model",
        str(work),
        False,
    )
    assert types[1] == "iteration_start"  # a fresh home (no system.md) has nothing to notice
    assert "tool_call" in types and "tool_result" in types and "usage" in types
    result_event = next(e for e in events if e["type"] == "tool_result")
    assert "notes.txt" in result_event["content"] and result_event["status"] == "completed"
    assert events[-1]["stop_reason"] == "end_turn" and events[-1]["text"] == "One file."


def test_stdin_and_attachments_join_the_prompt(home: Path, work: Path) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        result = openheim(
            "run", "summarise", "@notes.txt", home=home, cwd=work, stdin="piped text\n"
        )
    assert result.returncode == 0, result.stderr
    text = user_text(server.requests[0])
    assert text.startswith('summarise\n\n<file path="notes.txt">\nthe secret word is pineapple')
    assert text.endswith("</file>\n\npiped text")


def test_missing_attachment_is_a_usage_error(home: Path, work: Path) -> None:
    configure(home, None)
    result = openheim("run", "x", "@missing.txt", home=home, cwd=work)
    assert result.returncode == 2
    assert "cannot attach @missing.txt" in result.stderr


def test_unknown_config_key(home: Path, work: Path) -> None:
    (home / "config.toml").write_text("max_iteration = 3\n")
    result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "config.toml" in lines[0] and "max_iteration" in lines[0]
    assert "'max_iterations'" in lines[0]


def test_bad_toml(home: Path, work: Path) -> None:
    (home / "config.toml").write_text("default_provider = \n")
    result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 2 and "invalid TOML" in result.stderr


def test_missing_api_key(home: Path, work: Path) -> None:
    result = openheim("run", "hi", home=home, cwd=work, OPENHEIM_PROVIDER="openai")
    assert result.returncode == 2
    assert "no API key" in result.stderr and "OPENAI_API_KEY" in result.stderr


def test_unknown_provider_and_model(home: Path, work: Path) -> None:
    configure(home, None, extra='models = ["fake-model"]\n')
    result = openheim("run", "--provider", "nope", "hi", home=home, cwd=work)
    assert result.returncode == 2 and "unknown provider 'nope'" in result.stderr
    result = openheim("run", "--model", "other", "hi", home=home, cwd=work)
    assert result.returncode == 2 and "unknown model 'other'" in result.stderr


def test_unreachable_server(home: Path, work: Path) -> None:
    configure(home, None)  # port 9 (discard) has no listener on loopback
    result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "127.0.0.1:9" in result.stderr


def test_truncated_stream(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="partial answer here", cut_stream_after=2)]) as server:
        configure(home, server)
        result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "ended" in result.stderr


def test_debug_shows_the_traceback(home: Path, work: Path) -> None:
    configure(home, None)
    result = openheim("--debug", "run", "hi", home=home, cwd=work)
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_api_key_never_printed(home: Path, work: Path) -> None:
    reply = FakeReply(status=401, error_body="Incorrect API key provided: " + SECRET)
    with FakeLLMServer([reply]) as server:
        configure(home, server, extra='env_var = "FAKE_API_KEY"\n')
        result = openheim(
            "--debug", "run", "--json", "hi", home=home, cwd=work, FAKE_API_KEY=SECRET
        )
    assert result.returncode == 1
    assert server.requests[0].headers.get("authorization") == f"Bearer {SECRET}"
    assert SECRET not in result.stderr and SECRET not in result.stdout


def test_max_iterations_exit_code(home: Path, work: Path) -> None:
    calls = [FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": str(i)})]) for i in range(2)]
    with FakeLLMServer(calls) as server:
        configure(home, server)
        result = openheim("run", "--max-iterations", "2", "loop", home=home, cwd=work)
    assert result.returncode == 4
    assert "max_turn_requests" in result.stderr


def test_the_output_token_limit_exits_3(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="a cut answ", finish_reason="length")]) as server:
        configure(home, server)
        result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 3, result.stderr
    assert "a cut answ" in result.stdout and "Traceback" not in result.stderr


def test_tools_flag_selects_tools(home: Path, work: Path) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        result = openheim("run", "--tools", "read_*,glob", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert names == ["read_file", "glob"]


@pytest.mark.parametrize("flag", ["read,glob", "read_*,nothing_*"])
def test_tools_pattern_matching_no_tool_is_a_usage_error(home: Path, work: Path, flag: str) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        result = openheim("run", "--tools", flag, "hi", home=home, cwd=work)
    assert result.returncode == 2
    assert server.requests == []
    wrong = flag.split(",")[0 if flag.startswith("read,") else 1]
    assert f"--tools {wrong} matches no tool" in result.stderr
    assert "read_file" in result.stderr and "glob" in result.stderr  # the available tools
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_first_run_without_system_md_prints_no_notice(home: Path, work: Path) -> None:
    """A missing system.md is where every user starts: stderr names the session and no more."""
    with FakeLLMServer(["one"]) as server:
        configure(home, server)
        result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "one\n"
    assert [line.split()[0] for line in result.stderr.splitlines()] == ["openheim:"]
    assert "session" in result.stderr and "system.md" not in result.stderr


def test_empty_system_md_is_warned_about_on_the_first_run_only(home: Path, work: Path) -> None:
    (home / "system.md").write_text("\n")
    with FakeLLMServer(["one", "two"]) as server:
        configure(home, server)
        first = openheim("run", "--no-session", "hi", home=home, cwd=work)
        second = openheim("run", "--no-session", "hi", home=home, cwd=work)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert f"{home / 'system.md'} is empty" in first.stderr
    assert "system.md" not in second.stderr


def test_allow_shell_offers_the_shell(home: Path, work: Path) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        result = openheim("run", "--allow-shell", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert "execute_command" in names


def test_empty_prompt_is_a_usage_error(home: Path, work: Path) -> None:
    result = openheim("run", home=home, cwd=work)
    assert result.returncode == 2 and "no prompt given" in result.stderr


def test_bad_flag_value(home: Path, work: Path) -> None:
    result = openheim("run", "--max-iterations", "zero", "hi", home=home, cwd=work)
    assert result.returncode == 2 and "invalid int value" in result.stderr


def test_interrupt_cancels_cleanly(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(text="never finishes", hang_at=2)]) as server:
        configure(home, server)
        proc = subprocess.Popen(
            [sys.executable, "-m", "openheim", "run", "hi"],
            cwd=work,
            env=env_for(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            server.wait_for_requests(1, timeout=30)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert "cancelled" in err


def test_init_writes_once(home: Path, work: Path) -> None:
    target = home / "fresh"
    result = openheim("init", "--dir", str(target), home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    config = (target / "config.toml").read_text()
    assert "max_iterations = 10" in config and (target / "system.md").is_file()
    (target / "config.toml").write_text("max_iterations = 3\n")
    again = openheim("init", "--dir", str(target), home=home, cwd=work)
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr
    assert (target / "config.toml").read_text() == "max_iterations = 3\n"


def test_init_output_is_a_valid_config(home: Path, work: Path) -> None:
    assert openheim("init", home=home, cwd=work).returncode == 0
    with FakeLLMServer(["ok"]) as server:
        text = (home / "config.toml").read_text()
        (home / "config.toml").write_text(
            text + f'\n[providers.fake]\napi_base = "{server.base_url}"\ndefault_model = "m"\n'
        )
        result = openheim("run", "--provider", "fake", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr


def test_trust_command(home: Path, work: Path) -> None:
    result = openheim("trust", str(work), home=home, cwd=work)
    assert result.returncode == 0 and "trusted" in result.stdout
    listed = openheim("trust", "--list", home=home, cwd=work)
    assert listed.stdout.strip() == str(work.resolve())


def test_untrusted_project_cannot_enable_shell(home: Path, work: Path) -> None:
    (work / ".openheim").mkdir()
    (work / ".openheim" / "config.toml").write_text("allow_shell = true\n")
    with FakeLLMServer(["ok", "ok"]) as server:
        configure(home, server)
        result = openheim("run", "hi", home=home, cwd=work)
        assert result.returncode == 0 and "openheim trust" in result.stderr
        assert openheim("trust", home=home, cwd=work).returncode == 0
        trusted = openheim("run", "hi", home=home, cwd=work)
    assert trusted.returncode == 0
    names = [[t["function"]["name"] for t in r.body["tools"]] for r in server.requests]
    assert "execute_command" not in names[0] and "execute_command" in names[1]


def test_staged_file_changes_swap_the_write_tools(home: Path, work: Path) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        text = (home / "config.toml").read_text()
        (home / "config.toml").write_text('file_changes = "staged"\n' + text)
        result = openheim("run", "hi", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    names = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert {"preview_write_file", "preview_edit_file", "apply_file_change", "web_fetch"} <= names
    assert not names & {"write_file", "edit_file"}


def test_tool_choice_forces_the_first_call_only(home: Path, work: Path) -> None:
    replies: list[Any] = [FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": "."})]), "ok"]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        result = openheim("run", "--tool-choice", "list_dir", "look", home=home, cwd=work)
        assert result.returncode == 0, result.stderr
        first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "list_dir"}}
    assert "tool_choice" not in second or second["tool_choice"] == "auto"
    bad = openheim("run", "--tool-choice", "nope", "x", home=home, cwd=work)
    assert bad.returncode == 2 and "not an offered tool" in bad.stderr
