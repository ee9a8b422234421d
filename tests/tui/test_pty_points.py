"""The terminal UI's points on a real terminal: ``openheim chat`` in a pseudo-terminal, the
fake model as its model, its screen read through pyte. Thinking streams open (or stays hidden
by the setting), the edit just allowed shows its diff, ``/`` lists the registry's commands,
Shift+Tab changes the footer's approval mode, the footer ticks time and cost while a turn runs
and shows the model's own context window, the model picker marks the current model, a burst
typed after ``@`` goes to the file picker, and Ctrl+C cancels a running turn."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.runtime import commands
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.providers.test_windows import gguf
from tests.tui.pty_screen import PtyScreen
from tests.tui.support import child_env, configure

SHIFT_TAB = "\x1b[Z"
CTRL_C = "\x03"
MODE = re.compile(r"approval (\S+) \(⇧Tab\)")
TICKER = re.compile(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (\d+)s · \d+ tok/s")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer([]) as fake:
        yield fake


@pytest.fixture
def terms() -> Iterator[list[PtyScreen]]:
    """The terminals a test starts, closed (their process killed) at its end."""
    started: list[PtyScreen] = []
    yield started
    for term in started:
        term.close()


def chat(
    terms: list[PtyScreen],
    home: Path,
    work: Path,
    server: FakeLLMServer,
    *args: str,
    extra: str = 'approval = "auto"',
) -> PtyScreen:
    """``openheim chat ARGS`` on a 100 x 40 terminal, ``extra`` the config's top lines;
    returned once its session is open (the welcome line)."""
    configure(home, server, extra=extra)
    argv = [sys.executable, "-m", "openheim", "chat", *args]
    term = PtyScreen(argv, work, child_env(home), columns=100, lines=40)
    terms.append(term)
    term.wait_for("/help lists the commands")
    return term


def footer(term: PtyScreen) -> str:
    return term.screen.display[-1]


def typed(term: PtyScreen) -> str:
    """What the input box shows (one line: the row above its bottom border and the footer)."""
    return term.screen.display[-3].strip("▊▎ ")


def in_footer(term: PtyScreen, pattern: re.Pattern[str]) -> re.Match[str]:
    """The first match of ``pattern`` in the footer, waited for (bounded)."""
    found: list[re.Match[str]] = []

    def seen() -> bool:
        match = pattern.search(footer(term))
        found[:] = [match] if match else []
        return bool(found)

    term.wait_until(seen, repr(pattern.pattern))
    return found[0]


def test_thinking_streams_open_while_the_turn_runs(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    # the role chunk and three thinking pieces, then the model stalls before its answer
    server.add(FakeReply(reasoning="weighing the options", text="done", hang_at=4))
    term = chat(terms, home, work, server)
    term.type("think\r")
    term.wait_for("weighing the options")
    screen = term.text()
    assert "▼ thinking" in screen and "▶ thinking" not in screen  # open, not collapsed
    assert TICKER.search(footer(term))  # still streaming: shown live, not at the end


def test_thinking_is_hidden_by_the_setting(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    # all the thinking, then the answer, then the model stalls: the turn still runs
    server.add(FakeReply(reasoning="weighing the options", text="Answer: forty-two", hang_at=6))
    extra = 'approval = "auto"\n[tui]\nshow_thinking = false'
    term = chat(terms, home, work, server, extra=extra)
    term.type("think\r")
    term.wait_for("Answer: forty-two")  # the answer came after the thinking
    assert TICKER.search(footer(term))
    screen = term.text()
    assert "weighing" not in screen
    assert "▶ thinking" not in screen and "▼ thinking" not in screen  # not even its title


def test_the_edit_just_allowed_is_shown_with_its_diff(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    (work / "b.txt").write_text("old line\n")
    (work / "a.txt").write_text("alpha content\n")
    write = FakeToolCall("write_file", {"path": "b.txt", "content": "new line\n"}, "w1")
    read = FakeToolCall("read_file", {"path": "a.txt"}, "r1")
    server.add(FakeReply(tool_calls=[write]), FakeReply(tool_calls=[read]), "all done")
    term = chat(terms, home, work, server, extra='approval = "ask"')
    term.type("edit b.txt\r")
    term.wait_for("Allow openheim to write b.txt?")
    term.type("y")
    term.wait_for("all done")
    screen = term.text()
    assert "-old line" in screen and "+new line" in screen  # the diff, open
    assert "alpha content" not in screen  # another call's result stays collapsed
    assert (work / "b.txt").read_text() == "new line\n"


def test_slash_lists_the_registrys_commands(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    offered = commands.offered("tui")
    term = chat(terms, home, work, server)
    term.type("/")
    term.wait_for(offered[0].help)
    rows = [line.strip() for line in term.screen.display]
    width = max(len(spec.usage("/")) for spec in offered)
    for spec in offered[:10]:  # the palette's first rows, in the registry's order
        assert f"{spec.usage('/').ljust(width + 2)}{spec.help}"[:96] in rows
    term.type("mo")
    models = next(spec for spec in offered if spec.name == "models")
    others = [spec.help[:30] for spec in offered if spec.name != "models"]
    term.wait_until(
        lambda: models.help in term.text() and not any(o in term.text() for o in others),
        "the palette filtered down to /models",
    )


def test_shift_tab_changes_the_mode_in_the_footer(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    term = chat(terms, home, work, server, extra='approval = "ask"')
    first = in_footer(term, MODE).group(1)
    assert first == "ask"
    term.type(SHIFT_TAB)
    in_footer(term, re.compile(rf"approval (?!{first} )[^·]+ \(⇧Tab\)"))  # another mode now


def test_the_footer_ticks_time_and_cost_while_a_turn_runs(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    (work / "a.txt").write_text("alpha\n")
    server.add(
        FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "a.txt"})]),
        FakeReply(text="never " * 5, hang_at=3),
    )
    prices = 'approval = "auto"\n[prices."fake-model"]\ninput = 1000.0\noutput = 1000.0'
    term = chat(terms, home, work, server, extra=prices)
    assert not TICKER.search(footer(term))  # idle: no ticker
    term.type("go\r")
    term.wait_until(lambda: len(server.requests) == 2, "the second model call")
    cost = in_footer(term, re.compile(r"\$(\d+\.\d{4})"))  # the first call's, meanwhile
    assert float(cost.group(1)) > 0
    started = int(in_footer(term, TICKER).group(1))
    term.wait_for(f" {started + 1}s · ")  # it ticks on its own while the model stalls
    term.type(CTRL_C)
    term.wait_gone("tok/s")  # the turn is over: the ticker stops


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        ("local", "0 / 8.2k ctx"),  # a local model file says it was trained for 8,192
        ("gpt-3.5-turbo", "0 / 16.4k ctx"),  # a known model, served by the fake server
    ],
)
def test_the_footer_shows_the_models_own_context_window(
    terms: list[PtyScreen],
    home: Path,
    work: Path,
    server: FakeLLMServer,
    tmp_path: Path,
    model: str,
    shown: str,
) -> None:
    if model == "local":
        path = gguf(tmp_path / "small.gguf", 8192)
        table = f'kind = "llama_cpp"\ndefault_model = "small"\nmodel_path = "{path}"'
    else:
        table = f'api_base = "{server.base_url}"\ndefault_model = "{model}"'
    extra = f'approval = "auto"\n[providers.mine]\n{table}'
    term = chat(terms, home, work, server, "--provider", "mine", extra=extra)
    term.wait_for(shown)
    assert "128k ctx" not in footer(term)


def test_the_model_picker_marks_the_current_model(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    term = chat(terms, home, work, server)
    term.type(":models fake-large\r")
    term.wait_for("fake/fake-large ·")  # the footer names the model switched to
    term.type(":models\r")
    term.wait_for("● fake/fake-large (current)")
    assert "● fake/fake-model" not in term.text() and "fake/fake-model" in term.text()
    term.type("\r")  # Enter takes the highlighted entry: the current one
    term.wait_until(lambda: term.text().count("model: fake/") == 2, "the model picked")
    assert "model: fake/fake-model" not in term.text()
    assert "fake/fake-large ·" in footer(term)


def test_a_burst_typed_after_at_goes_to_the_file_picker(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    (work / "main.py").write_text("x\n")
    (work / "other.txt").write_text("y\n")
    term = chat(terms, home, work, server)
    term.type("@mai")  # one write: as fast as a terminal delivers it
    term.wait_for("attach a file")
    term.wait_until(  # the picker filters on what was typed: other.txt is not offered
        lambda: "main.py" in term.text() and "other.txt" not in term.text(), "the filtered picker"
    )
    assert typed(term) == "@"  # nothing of the burst landed in the input
    term.type("n\r")
    term.wait_gone("attach a file")
    term.wait_until(lambda: typed(term) == "@main.py", "the file picked into the input")


def test_ctrl_c_cancels_a_running_turn_and_the_chat_goes_on(
    terms: list[PtyScreen], home: Path, work: Path, server: FakeLLMServer
) -> None:
    server.add(FakeReply(text="never ending story", hang_at=3), "second answer")
    term = chat(terms, home, work, server)
    term.type("go\r")
    term.wait_for("never ending")  # streamed, then the model stalls
    term.type("next")
    term.wait_until(lambda: typed(term) == "next", "the draft")
    term.type(CTRL_C)
    term.wait_for("stopped: cancelled")
    term.wait_gone("tok/s")
    assert term.process.poll() is None  # cancelled the turn, not the chat
    assert typed(term) == "next"  # the draft is kept
    term.type("\r")
    term.wait_for("second answer")
    assert server.requests[1].messages[-1]["content"] == "next"
