"""Every ```python block in docs/*.md is a complete program, and it runs.

Each block runs in a fresh interpreter, in an empty folder, with ``OPENHEIM_HOME`` pointed at an
empty folder and no API key or ``OPENHEIM_*`` setting of the caller's environment, so an example
can rely on nothing but what it writes itself. Blocks fenced with another language (``json``,
``toml``, ``bash``, ``text``...) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openheim.process.child_env import is_secret_name

DOCS = Path(__file__).resolve().parent.parent / "docs"
TIMEOUT_S = 45.0
"""Seconds one example may run (below the suite's per-test timeout)."""

MUST_HAVE_EXAMPLES = ("library.md", "custom-tools.md", "custom-provider.md", "acp.md")
"""Docs that document an API and so must carry runnable examples."""

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def python_blocks(doc: Path) -> list[tuple[int, str]]:
    """The ```python blocks of ``doc``: the line of each opening fence and the dedented code."""
    text = doc.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, textwrap.dedent(match.group("body")))
        for match in _FENCE.finditer(text)
    ]


def _examples() -> list[object]:
    return [
        pytest.param(doc, line, code, id=f"{doc.name}-{index}")
        for doc in sorted(DOCS.glob("*.md"))
        for index, (line, code) in enumerate(python_blocks(doc), 1)
    ]


def _clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without keys or openheim settings, with an empty home."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("OPENHEIM_") and not is_secret_name(name)
    }
    env["OPENHEIM_HOME"] = str(home)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.mark.parametrize(("doc", "line", "code"), _examples())
def test_example_runs(doc: Path, line: int, code: str, tmp_path: Path) -> None:
    home, cwd = tmp_path / "openheim-home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    script = tmp_path / f"{doc.stem.replace('-', '_')}_line_{line}.py"
    script.write_text(code, encoding="utf-8")
    where = f"docs/{doc.name}, the ```python block at line {line}"
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=cwd,
            env=_clean_env(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{where} ran over {TIMEOUT_S:g} s\n--- stderr ---\n{_text(err.stderr)}")
    assert done.returncode == 0, (
        f"{where} exited with {done.returncode}\n"
        f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
    )


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def test_api_docs_have_examples() -> None:
    for name in MUST_HAVE_EXAMPLES:
        assert python_blocks(DOCS / name), f"docs/{name} has no ```python example"


def test_fences_are_found_with_their_lines(tmp_path: Path) -> None:
    doc = tmp_path / "sample.md"
    doc.write_text(
        "# Sample\n\n```python\nprint(1)\n```\n\n```json\n{}\n```\n\n"
        "- a list item:\n\n  ```python\n  if True:\n      print(2)\n  ```\n",
        encoding="utf-8",
    )
    assert python_blocks(doc) == [(3, "print(1)\n"), (13, "if True:\n    print(2)\n")]
