"""End to end: the real ``openheim`` in a pseudo-terminal, its screen read through pyte: a
prompt typed, the streamed answer seen, then Ctrl+C twice quits with the terminal restored;
SIGTERM does the same; Ctrl+C clears a draft first, and quitting names the session to resume
(only one with messages); an approval shows its keys and takes a reason for the model."""

from __future__ import annotations

import signal
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.tui.pty_screen import PtyScreen
from tests.tui.support import child_env, configure

ALT_SCREEN_OFF = b"\x1b[?1049l"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer([]) as fake:
        yield fake


def start(home: Path, work: Path, server: FakeLLMServer, *args: str) -> PtyScreen:
    configure(home, server, extra='approval = "auto"')
    argv = [sys.executable, "-m", "openheim", *args]
    return PtyScreen(argv, work, child_env(home), columns=100, lines=30)


def test_type_a_prompt_see_the_answer_and_quit(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    server.add(FakeReply(chunks=["The answer ", "is **forty-two**."]))
    term = start(home, work, server)
    try:
        term.wait_for("fake/fake-model")  # the footer: the session is open
        term.type("what is the answer?\r")
        term.wait_for("The answer is forty-two.")
        assert "> what is the answer?" in term.text()
        term.wait_gone("tok/s")  # the footer is no longer busy: the turn is over
        term.type("\x03")
        term.wait_for("press Ctrl+C again to quit")
        term.type("\x03")
        code = term.wait_exit()
        assert code == 0
        assert ALT_SCREEN_OFF in term.raw  # the normal screen is back
        assert termios.tcgetattr(term.slave) == term.original  # and the terminal's modes
    finally:
        term.close()
    body = server.requests[0].body
    assert body["messages"][-1]["content"] == "what is the answer?"


def test_sigterm_restores_the_terminal(home: Path, work: Path, server: FakeLLMServer) -> None:
    term = start(home, work, server, "chat")
    try:
        term.wait_for("fake/fake-model")
        term.process.send_signal(signal.SIGTERM)
        code = term.wait_exit()
        assert code == 143
        assert ALT_SCREEN_OFF in term.raw
        assert termios.tcgetattr(term.slave) == term.original
    finally:
        term.close()


def test_an_error_is_one_line_after_the_terminal_is_restored(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    term = start(home, work, server, "chat", "--session", "nosuchsession")
    try:
        code = term.wait_exit()
        assert code == 2
        assert termios.tcgetattr(term.slave) == term.original
        after = term.raw.rpartition(ALT_SCREEN_OFF)[2].decode(errors="replace")
        assert "openheim: error: " in after and "nosuchsession" in after
        assert "Traceback" not in term.raw.decode(errors="replace")
    finally:
        term.close()


def test_the_plain_repl_on_a_terminal(home: Path, work: Path, server: FakeLLMServer) -> None:
    # a slow server: the turn goes on for a while after the answer is on the screen
    server.add(FakeReply(text="plain answer", chunk_delay=0.2))
    term = start(home, work, server, "chat", "--no-tui")
    try:
        term.wait_prompt()
        term.type("hello\r")
        term.wait_for("plain answer")
        term.wait_prompt()  # the turn is over: the REPL reads the next line
        term.type("\x03")  # Ctrl-C at the prompt ends the chat
        assert term.wait_exit() == 0
        assert b"cancelled" not in term.raw  # it ended the chat, not a turn
    finally:
        term.close()
    assert ALT_SCREEN_OFF not in term.raw  # no UI: the REPL never took the screen


def test_ctrl_c_clears_a_draft_and_quitting_names_the_session_to_resume(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    server.add("hello back")
    term = start(home, work, server, "chat")
    try:
        term.wait_for("/help lists the commands")  # the welcome line
        term.type("hi\r")
        term.wait_for("hello back")
        term.wait_gone("tok/s")
        term.type("a draft to drop")
        term.wait_for("a draft to drop")
        term.type("\x03")
        term.wait_gone("a draft to drop")  # cleared, and the UI goes on
        assert "again to quit" not in term.text()
        term.type("\x03")
        term.wait_for("press Ctrl+C again to quit")
        term.type("\x03")
        assert term.wait_exit() == 0
    finally:
        term.close()
    store = open_store(home)
    try:
        (record,) = store.list()
    finally:
        store.close()
    after = term.raw.rpartition(ALT_SCREEN_OFF)[2].decode(errors="replace")
    assert f"resume this session with: openheim chat --session {record.id}" in after


def test_quitting_a_session_with_nothing_said_stores_nothing(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    term = start(home, work, server, "chat")
    try:
        term.wait_for("/help lists the commands")
        term.type(":quit\r")
        assert term.wait_exit() == 0
    finally:
        term.close()
    after = term.raw.rpartition(ALT_SCREEN_OFF)[2].decode(errors="replace")
    assert "resume" not in after
    store = open_store(home)
    try:
        assert store.list() == []
    finally:
        store.close()


def test_the_approval_keys_show_on_a_real_terminal(
    home: Path, work: Path, server: FakeLLMServer
) -> None:
    call = FakeToolCall("write_file", {"path": "b.txt", "content": "new\n"})
    server.add(FakeReply(tool_calls=[call]), "kept")
    configure(home, server, extra='approval = "ask"')
    argv = [sys.executable, "-m", "openheim", "chat"]
    term = PtyScreen(argv, work, child_env(home), columns=100, lines=40)
    try:
        term.wait_for("fake/fake-model")
        term.type("write b.txt\r")
        term.wait_for("Allow openheim to write b.txt?")
        for option in ("[y] allow once", "[a] allow always", "[n] reject", "[r] reject always"):
            term.wait_for(option)
        term.wait_for("[t] no, and tell the model why")
        term.wait_for("asked because the approval mode is ask")
        term.type("tyes, but keep it\r")  # typed fast: every key after t is the reason
        term.wait_for("kept")
        term.type("\x11")  # Ctrl+Q
        assert term.wait_exit() == 0
    finally:
        term.close()
    assert not (work / "b.txt").exists()
    told = [m["content"] for m in server.requests[1].messages if m.get("role") == "tool"]
    assert "saying: yes, but keep it" in told[0]
