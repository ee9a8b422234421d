"""The plain REPL, driven through a pipe: ``openheim chat --no-tui`` and a bare ``openheim``
whose stdin is not a terminal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.prompt_commands import SENT, TYPED, install
from tests.tui.support import child_env, configure, run_openheim


def chat(home: Path, work: Path, typed: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_openheim(home, work, "chat", "--no-tui", *args, typed=typed)


def test_prompts_stream_answers_and_commands_run(home: Path, work: Path) -> None:
    (work / "a.txt").write_text("x\n")
    replies: list[FakeReply | str] = [
        "Hello there!",
        FakeReply(tool_calls=[FakeToolCall("list_dir", {"path": "."})]),
        "Done listing.",
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server, extra='approval = "auto"')
        done = chat(home, work, "hi\n:cost\n/helo\nlist files\n:verbose\n:quit\nnot sent\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Hello there!"
    assert lines[1].startswith("tokens: ") and "cost: unknown" in lines[1]
    assert lines[2] == "unknown command :helo; did you mean :help? (:help lists them)"
    assert "Done listing." in lines and "tool items hidden" in lines
    assert "→ list_dir" in done.stderr and "✓ list_dir: completed" in done.stderr
    assert len(server.requests) == 3  # "not sent" after :quit never reached the model
    assert server.requests[1].body["messages"][-1]["content"] == "list files"


def test_first_prompt_then_end_of_input_ends_the_chat(home: Path, work: Path) -> None:
    with FakeLLMServer(["first answer"]) as server:
        configure(home, server)
        done = chat(home, work, "", "say", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "first answer"
    assert server.requests[0].body["messages"][-1]["content"] == "say hello"


def test_sessions_list_restore_and_export(home: Path, work: Path) -> None:
    with FakeLLMServer(["one", "two"]) as server:
        configure(home, server)
        first = chat(home, work, "remember pineapple\n:sessions\n")
        session_id = first.stdout.splitlines()[1].split()[0]
        second = chat(home, work, f":sessions {session_id}\nand now?\n:export out.md\n")
    assert second.returncode == 0, second.stderr
    assert "restored session" in second.stdout
    sent = server.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["remember pineapple", "and now?"]
    exported = (work / "out.md").read_text()
    assert "remember pineapple" in exported and "and now?" in exported


def test_models_switch_and_unknown_skill(home: Path, work: Path) -> None:
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        done = chat(home, work, ":models\n:models fake/fake-large\n:skill nope\nhi\n")
    assert "* fake/fake-model" in done.stdout and "  fake/fake-large" in done.stdout
    assert "model: fake/fake-large" in done.stdout
    assert "openheim: error: there is no skill named 'nope'" in done.stderr
    assert server.requests[0].body["model"] == "fake-large"


def test_an_attachment_mention_is_sent_and_a_secret_refused(home: Path, work: Path) -> None:
    (work / "notes.txt").write_text("the word is pineapple\n")
    (work / ".env").write_text("KEY=1\n")
    with FakeLLMServer(["seen"]) as server:
        configure(home, server)
        done = chat(home, work, "read @.env\nread @notes.txt\n")
    assert "refused to attach @.env" in done.stderr
    [request] = server.requests
    assert 'path="notes.txt"' in request.body["messages"][-1]["content"]
    assert "pineapple" in request.body["messages"][-1]["content"]


def test_bare_openheim_without_a_terminal_prints_usage(home: Path, work: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openheim"],
        stdin=subprocess.DEVNULL,
        cwd=work,
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "usage: openheim" in done.stdout


def test_sigint_cancels_the_turn_and_sigterm_ends_the_chat(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [FakeReply(text="slow " * 5, hang_at=3), "after"]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        repl = subprocess.Popen(
            [sys.executable, "-m", "openheim", "chat", "--no-tui"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=work,
            env=child_env(home),
            text=True,
            start_new_session=True,
        )
        try:
            assert repl.stdin is not None and repl.stdout is not None
            repl.stdin.write("go\n")
            repl.stdin.flush()
            server.wait_for_requests(1)
            repl.send_signal(signal.SIGINT)
            repl.stdin.write("again\n")
            repl.stdin.flush()
            server.wait_for_requests(2)
            assert wait_line(repl.stdout, "after")
            repl.send_signal(signal.SIGTERM)
            code = repl.wait(30)
            err = repl.stderr.read() if repl.stderr else ""
        finally:
            if repl.poll() is None:
                repl.kill()
                repl.wait(10)
    assert code == 143
    assert "stopped: cancelled" in err and "press Ctrl-C again within 2 s to quit" in err
    # the cancelled turn left valid history: the prompt, then what had streamed of the answer
    # when the signal came (nothing, if it came first: the two race), then the next prompt
    messages = server.requests[1].body["messages"]
    roles = [m["role"] for m in messages]
    assert roles[-1] == "user" and "again" in str(messages[-1]["content"])
    if roles[-2] == "assistant":
        assert roles[-3] == "user" and str(messages[-2]["content"]).startswith("slow")
    else:
        assert roles[-2] == "user" and "go" in str(messages[-2]["content"])


def wait_line(stream: IO[str], wanted: str) -> bool:
    """Read lines (at most 50) until one holds ``wanted``."""
    for _ in range(50):
        line = stream.readline()
        if not line:
            return False
        if wanted in line:
            return True
    return False


def test_config_masks_keys_and_the_answer_never_shows_them(home: Path, work: Path) -> None:
    secret = "sk-live-0123456789abcdefSECRET"
    with FakeLLMServer([f"the key is {secret}"]) as server:
        configure(home, server)
        text = (home / "config.toml").read_text()
        (home / "config.toml").write_text(text + f'api_key = "{secret}"\n')
        done = chat(home, work, ":config\nwhat is the key?\n")
    assert done.returncode == 0, done.stderr
    assert "[providers.fake]" in done.stdout and "key: set" in done.stdout
    assert secret not in done.stdout and secret not in done.stderr


def summariser(request: RecordedRequest) -> FakeReply:
    """Answers "ok", and a summary request with "SUMMARY of one"."""
    system = str(request.body["messages"][0]["content"])
    return FakeReply(text="SUMMARY of one" if system.startswith("You compact") else "ok")


def test_compact_summarises_the_older_turns(home: Path, work: Path) -> None:
    with FakeLLMServer(default=summariser) as server:
        configure(home, server)
        long = "tell me about it " * 30
        done = chat(home, work, f"/compact\none {long}\ntwo {long}\n/compact\nthree\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "nothing to compact yet"
    assert lines[3].startswith("compacted 2 older messages into a summary (about ")
    first, *rest = server.requests[-1].body["messages"][1:]
    head, second = first["content"]  # the summary, then the first turn kept
    assert head["text"].endswith("compacted:]\nSUMMARY of one") and second["text"].startswith("two")
    assert len(rest) == 2 and not any(str(m["content"]).startswith("one") for m in rest)


def test_a_template_is_a_command(home: Path, work: Path) -> None:
    (home / "prompts").mkdir()
    (home / "prompts" / "fix.md").write_text(
        "---\narguments: lang\n---\nFix this {{lang}}: {{input}}"
    )
    with FakeLLMServer(["fixed"]) as server:
        configure(home, server)
        done = chat(home, work, ":help\n/fix lang=go the loop\n/fix no language\n")
    assert done.returncode == 0, done.stderr
    assert "skills and templates as commands: /fix" in done.stdout
    assert server.requests[0].body["messages"][-1]["content"] == "Fix this go: the loop"
    assert "needs the argument lang" in done.stderr and len(server.requests) == 1


def test_a_templates_own_mentions_are_not_attached(home: Path, work: Path) -> None:
    (home / "prompts").mkdir()
    (home / "prompts" / "peek.md").write_text("Look at @private.txt and {{input}}")
    (work / "private.txt").write_text("PRIVATE CONTENT")
    (work / "mine.txt").write_text("MY CONTENT")
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        done = chat(home, work, "/peek @mine.txt\n")
    assert done.returncode == 0, done.stderr
    sent = str(server.requests[0].body["messages"][-1]["content"])
    assert "MY CONTENT" in sent and "PRIVATE CONTENT" not in sent


def test_pin_keeps_a_prompt_through_compact(home: Path, work: Path) -> None:
    with FakeLLMServer(default=summariser) as server:
        configure(home, server)
        typed = "/pin\nuse tabs\n/pin\nsecond\n/compact\nthird\n"
        done = chat(home, work, typed)
    assert done.returncode == 0, done.stderr
    assert "there is no prompt of yours to pin" in done.stderr
    assert "pinned: use tabs" in done.stdout.splitlines()
    head = server.requests[-1].body["messages"][1]["content"][0]["text"]
    assert "[Pinned by the user" in head and head.endswith("use tabs")


def test_a_first_run_without_system_md_prints_no_notice(home: Path, work: Path) -> None:
    """A fresh data dir has no system.md; that is the normal state, not something to notice."""
    with FakeLLMServer(["Hello there!"]) as server:
        configure(home, server)
        (home / "system.md").unlink()
        done = chat(home, work, "hi\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Hello there!"]
    assert "system.md" not in done.stderr and "warning" not in done.stderr


def test_skill_and_template_commands_reach_the_model_expanded(home: Path, work: Path) -> None:
    install(home)
    with FakeLLMServer(["one", "two"]) as server:
        configure(home, server)
        done = chat(home, work, "".join(f"{line}\n" for line in TYPED))
    assert done.returncode == 0, done.stderr
    assert [r.body["messages"][-1]["content"] for r in server.requests] == list(SENT)


def test_a_refused_write_ends_with_the_closing_lines_of_run(home: Path, work: Path) -> None:
    """As ``openheim run`` prints them: how to let the call run, then the warning; a later
    answer with nothing denied adds none."""
    call = FakeToolCall("write_file", {"path": "out.txt", "content": "x\n"})
    replies: list[FakeReply | str] = [FakeReply(tool_calls=[call]), "I wrote out.txt", "noted"]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = chat(home, work, "write out.txt\nthanks\n")
    assert done.returncode == 0, done.stderr
    assert not (work / "out.txt").exists()
    assert done.stdout.splitlines()[-2:] == ["I wrote out.txt", "noted"]
    rule = "openheim permissions add 'allow path \"out.txt\"'"
    assert done.stderr.splitlines()[-3:] == [
        "openheim: 1 tool call needed approval and no one could be asked. To let such calls "
        "run: run openheim in a terminal to be asked or pass --approve auto, or add this rule:",
        f"  {rule}",
        "openheim: 1 tool call was denied; the answer above may describe work that was refused",
    ]
    told = next(m for m in server.requests[1].messages if m.get("role") == "tool")["content"]
    assert "no one to ask" in told and rule in told


@pytest.mark.parametrize(
    ("flags", "shown"), [pytest.param((), False, id="default"), (("--tool-output",), True)]
)
def test_tool_output_writes_each_result_under_its_line(
    home: Path, work: Path, flags: tuple[str, ...], shown: bool
) -> None:
    (work / "notes.txt").write_text("the word is pineapple\n")
    call = FakeToolCall("read_file", {"path": "notes.txt"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), "read it"]) as server:
        configure(home, server)
        done = chat(home, work, "read notes.txt\n", *flags)
    assert done.returncode == 0, done.stderr
    assert "  ✓ read_file: completed" in done.stderr
    assert ("    the word is pineapple" in done.stderr.splitlines()) is shown
