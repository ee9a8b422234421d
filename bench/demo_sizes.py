"""The demo's truth by folder size: the real ``openheim run`` of the demo's prompt on the shipped
SmolLM2-135M, in folders of 0 to 50 realistic entries, in this repository's top-level layout and
in this checkout's root, one run each, in turn (the machine's cores are shared).

For each folder: the exit code, how many of its entries the answer names (whole names: ``src``
inside ``src.js`` does not count), the names it gives that are not there, and the lines it
writes more than once. The demo's targets: exit 0, at least 80% named up to 12 entries, none
invented, no line twice. Greedy decoding makes each run repeatable, so one run per folder is a
figure, not a sample; a different list of names gives different figures.

    .venv/bin/python bench/demo_sizes.py [--sizes 0 1 2 3 5 8 12 15 20 30 50] [--prompt TEXT]
        [--no-required]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEMO = re.search(r'prompt="\$\{\*:-(.+?)\}"', Path("scripts/demo").read_text())
PROMPT = DEMO.group(1) if DEMO else "List this folder and name its files."
SIZES = (0, 1, 2, 3, 5, 8, 12, 15, 20, 30, 50)
NAMES = (
    *("README.md", "src/", "tests/", "docs/", "pyproject.toml", "LICENSE", ".gitignore"),
    *("setup.cfg", "Makefile", "requirements.txt", "notes.txt", "main.py", "config.yaml"),
    *("data/", "scripts/", "build/", ".github/", "CHANGELOG.md", "Dockerfile", "app.js"),
    *("package.json", "index.html", "style.css", "utils.py", "todo.md", "assets/", "lib/"),
    *("report.pdf", "photo.jpg", "budget.xlsx", "server.go", "go.mod", "Cargo.toml", "main.rs"),
    *("tsconfig.json", ".env.example", "vendor/", "examples/", "benchmark.py", "schema.sql"),
    *("CONTRIBUTING.md", "logo.png", "notebook.ipynb", "requirements-dev.txt", "tox.ini"),
    *(".editorconfig", "deploy.sh", "models/", "output.csv", "Gemfile"),
)
"""Entries of the kind a newcomer's folder holds; a folder of N takes the first N."""
REPO_LAYOUT = (
    *(".ci/", ".git/", ".gitignore", ".venv/", "CHANGELOG.md", "README.md", "bench/", "docs/"),
    *("pyproject.toml", "scripts/", "src/", "tests/"),
)
NAME_LIKE = re.compile(r"[\w.-]*\w\.[A-Za-z]{1,5}\b|[\w.-]+/")
"""What reads as a file or folder name in an answer (``x.md``, ``src/``)."""


@dataclass
class Result:
    """One run in one folder."""

    label: str
    code: int
    named: int
    total: int
    invented: list[str]
    repeated: int
    seconds: float


def make(names: tuple[str, ...]) -> Path:
    """A new folder holding ``names`` (a trailing ``/`` makes a folder)."""
    work = Path(tempfile.mkdtemp(prefix="demo-sizes-"))
    for name in names:
        if name.endswith("/"):
            (work / name).mkdir()
        else:
            (work / name).write_text("x\n")
    return work


def run(label: str, work: Path, home: Path, prompt: str, required: bool) -> Result:
    """One ``openheim run`` of ``prompt`` in ``work`` on the shipped model, scored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    env.update(OPENHEIM_HOME=str(home), OPENHEIM_PROVIDER="local")
    argv = [sys.executable, "-m", "openheim", "run", "--no-session", "--max-iterations", "4"]
    argv += ["--tool-choice", "required", prompt] if required else [prompt]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    there = {entry.name for entry in work.iterdir()}
    out = done.stdout
    named = {n for n in there if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", out)}
    invented = sorted({m.rstrip("/") for m in NAME_LIKE.findall(out)} - there)
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    repeated = len(lines) - len(set(lines))
    return Result(label, done.returncode, len(named), len(there), invented, repeated, seconds)


def report(result: Result) -> str:
    """One table row."""
    share = f"{result.named}/{result.total}"
    invented = ", ".join(result.invented[:4]) or "-"
    return (
        f"{result.label:>10}  exit {result.code}  named {share:>6}  invented {invented:<30}  "
        f"repeated lines {result.repeated}  {result.seconds:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument(
        "--no-required",
        action="store_true",
        help="leave out --tool-choice (the provider's default applies, as in a plain run)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="demo-sizes-home-") as folder:
        home = Path(folder)
        (home / "config.toml").write_text('default_provider = "local"\n')
        folders = [(str(n), make(NAMES[:n])) for n in args.sizes]
        folders += [("layout", make(REPO_LAYOUT)), ("root", Path.cwd())]
        choice = "left out" if args.no_required else "required"
        print(f"prompt {args.prompt!r}, --tool-choice {choice}")
        for label, work in folders:
            print(report(run(label, work, home, args.prompt, not args.no_required)), flush=True)


if __name__ == "__main__":
    main()
