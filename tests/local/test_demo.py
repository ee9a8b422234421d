"""The README's first command, on the real embedded model: the demo's prompt is carried out
through a tool call, and its answer comes from the call's result."""

from __future__ import annotations

import re
from pathlib import Path

from openheim.providers.llama_prefix import SUFFIX
from tests.test_cli import openheim

DEMO_PROMPT = re.search(r'prompt="\$\{\*:-(.+?)\}"', (Path("scripts/demo")).read_text())
FILES = ("alpha.txt", "bravo.md", "charlie.py", "notes/")


def demo(home: Path, work: Path) -> tuple[str, str]:
    assert DEMO_PROMPT is not None
    args = ("run", "--no-session", "--tool-choice", "required", "--max-iterations", "4")
    done = openheim(*args, DEMO_PROMPT.group(1), home=home, cwd=work, OPENHEIM_PROVIDER="local")
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_the_demo_prompt_lists_the_folder_and_names_its_files(home: Path, work: Path) -> None:
    for name in FILES:
        (work / name).mkdir() if name.endswith("/") else (work / name).write_text("x\n")
    out, err = demo(home, work)
    assert '→ list_dir {"path": "."}' in err
    assert "✓ list_dir: completed, 4 lines" in err
    named = [name for name in FILES if name in out]
    assert len(named) >= 3, out  # read from the result: the model cannot guess these names
    cached = list((home / "cache" / "llama").glob(f"*{SUFFIX}"))
    assert len(cached) == 2  # the prompt with the tools, and the one it answers under
    again, _ = demo(home, work)
    assert [name for name in FILES if name in again] == named
