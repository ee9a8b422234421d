"""The README's first command, on the real embedded model: the demo's prompt is carried out
through a tool call, and its answer comes from the call's result."""

from __future__ import annotations

import re
from pathlib import Path

from openheim.providers.llama_prefix import SUFFIX
from tests.cli.test_cli import openheim

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
    assert "→ list_dir {}" in err  # a small model is offered only the required arguments
    assert "✓ list_dir: completed, 4 lines" in err
    named = [name for name in FILES if name in out]
    assert len(named) >= 3, out  # read from the result: the model cannot guess these names
    cached = list((home / "cache" / "llama").glob(f"*{SUFFIX}"))
    assert len(cached) == 2  # the prompt with the tools, and the one it answers under
    again, _ = demo(home, work)
    assert [name for name in FILES if name in again] == named


REPO_LAYOUT = (
    *(".ci/", ".git/", ".gitignore", ".venv/", "CHANGELOG.md", "README.md", "bench/", "docs/"),
    *("pyproject.toml", "scripts/", "src/", "tests/"),
)
NAME_LIKE = re.compile(r"[\w.-]*\w\.[A-Za-z]{1,5}\b|[\w.-]+/")


def test_the_demo_tells_the_truth_about_this_repositorys_layout(home: Path, work: Path) -> None:
    """This repository's top-level layout (12 entries, dot-folders included), three runs: the
    first cold (no prompt cache), then warm. Each exits 0 naming at least 80% of the entries,
    none that is not there, with no line twice."""
    for name in REPO_LAYOUT:
        (work / name).mkdir() if name.endswith("/") else (work / name).write_text("x\n")
    there = {name.rstrip("/") for name in REPO_LAYOUT}
    for _ in range(3):
        out, _ = demo(home, work)
        named = {n for n in there if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", out)}
        assert len(named) >= 0.8 * len(there), out
        invented = {m.rstrip("/") for m in NAME_LIKE.findall(out)} - there
        assert not invented, out
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        assert len(lines) == len(set(lines)), out
