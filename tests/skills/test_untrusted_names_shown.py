"""A file name an untrusted project chose reaches the terminal as text: the escape sequences
and line breaks in it are shown escaped, never acted on (a title set, colours, a forged line)."""

from __future__ import annotations

from pathlib import Path

from openheim.events import Notice, notice_line
from openheim.testing import FakeLLMServer
from tests.cli.test_cli import configure, openheim

ODD = "x\x1b[31mred\x1b]0;title\x07\nopenheim: forged\r"


def test_a_notice_is_one_printable_line() -> None:
    line = notice_line(Notice(f"skipped {ODD}"))
    assert line.isprintable()
    assert "\\x1b[31mred" in line and "\\n" in line and "\\x07" in line


def test_an_untrusted_skill_s_odd_name_is_shown_escaped(home: Path, work: Path) -> None:
    (work / ".git").mkdir()  # the project's root
    (work / "outside.txt").write_text("not a skill")
    skills = work / ".openheim" / "skills"
    skills.mkdir(parents=True)
    (skills / f"{ODD}.md").symlink_to(work / "outside.txt")
    with FakeLLMServer(["ok"]) as llm:
        configure(home, llm)
        done = openheim("run", "hello", home=home, cwd=work)
    assert done.returncode == 0
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr and "\r" not in done.stderr
    assert "\nopenheim: forged" not in done.stderr
    assert "skipped skill file" in done.stderr and "\\x1b[31mred" in done.stderr
