"""The README's first command, on the real embedded model: the demo's prompt is carried out
through a tool call, and its answer comes from the call's result."""

from __future__ import annotations

import re
from pathlib import Path

from openheim.providers.llama_prefix import SUFFIX
from tests.cli.test_cli import openheim

DEMO_PROMPT = re.search(r'prompt="\$\{\*:-(.+?)\}"', (Path("scripts/demo")).read_text())
FILES = ("alpha.txt", "bravo.md", "charlie.py", "notes/")


def demo(home: Path, work: Path, prompt: str | None = None, *flags: str) -> tuple[str, str]:
    """The demo's run (its prompt unless ``prompt``; its flags unless ``flags``)."""
    assert DEMO_PROMPT is not None
    flags = flags or ("--tool-choice", "required", "--max-iterations", "4")
    asked = prompt or DEMO_PROMPT.group(1)
    env = {"OPENHEIM_PROVIDER": "local"}
    done = openheim("run", "--no-session", *flags, asked, home=home, cwd=work, **env)
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


def make(work: Path, names: tuple[str, ...]) -> set[str]:
    """The folder's entries (a trailing ``/`` makes a folder); their names."""
    for name in names:
        (work / name).mkdir() if name.endswith("/") else (work / name).write_text("x\n")
    return {name.rstrip("/") for name in names}


def truthful(out: str, there: set[str], share: float) -> None:
    """The answer names at least ``share`` of the entries, none that is not there, and has no
    line twice."""
    named = {n for n in there if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", out)}
    assert len(named) >= share * len(there), out
    invented = {m.rstrip("/") for m in NAME_LIKE.findall(out)} - there
    assert not invented, out
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), out


def only_the_list(out: str, there: set[str]) -> None:
    """The answer is the listing's opening, then names of the folder's entries and a full stop:
    nothing after the list (no sentence of the prompt, no made-up code)."""
    opening, _, rest = out.strip().partition(": ")
    assert opening == f"The folder . holds {len(there)} entries", out
    assert rest.endswith("."), out
    given = rest.removesuffix(".").strip().split(", ")
    assert {name.rstrip("/") for name in given} <= there, out


def test_the_demo_tells_the_truth_about_this_repositorys_layout(home: Path, work: Path) -> None:
    """This repository's top-level layout (12 entries, dot-folders included), three runs: the
    first cold (no prompt cache), then warm. Each exits 0 naming at least 80% of the entries,
    none that is not there, with no line twice."""
    there = make(work, REPO_LAYOUT)
    for _ in range(3):
        out, _ = demo(home, work)
        truthful(out, there, 0.8)
        only_the_list(out, there)


def test_the_demo_in_an_empty_folder_says_it_is_empty(home: Path, work: Path) -> None:
    """Nothing to list: exit 0, the folder said to be empty, no name made up, no line twice."""
    out, err = demo(home, work)
    assert "→ list_dir {}" in err
    assert "empty" in out, out
    truthful(out, set(), 0)


THIRTY = (
    *("README.md", "src/", "tests/", "docs/", "pyproject.toml", "LICENSE", ".gitignore"),
    *("setup.cfg", "Makefile", "requirements.txt", "notes.txt", "main.py", "config.yaml"),
    *("data/", "scripts/", "build/", ".github/", "CHANGELOG.md", "Dockerfile", "app.js"),
    *("package.json", "index.html", "style.css", "utils.py", "todo.md", "assets/", "lib/"),
    *("report.pdf", "photo.jpg", "budget.xlsx"),
)
"""bench/demo_sizes.py's folder of 30: unconstrained, the model made up ``pyproject.yaml`` in
it and repeated itself until the guard stopped the reply."""


def test_a_folder_of_thirty_is_answered_without_a_made_up_name(home: Path, work: Path) -> None:
    there = make(work, THIRTY)
    out, _ = demo(home, work, "What files are in this folder?")
    truthful(out, there, 0.5)


def test_what_files_are_in_this_folder_lists_it_without_the_demos_flags(
    home: Path, work: Path
) -> None:
    """The shipped model's first reply must call a tool by default: left to choose, it
    called none and wrote a made-up list."""
    there = make(work, FILES)
    out, err = demo(home, work, "What files are in this folder?", "--max-iterations", "4")
    assert "→ list_dir {}" in err
    truthful(out, there, 0.75)
    only_the_list(out, there)
