"""``--version``, ``run`` and ``acp`` never import the UI toolkit; without it, the UI says
what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.tui.support import child_env, configure, run_openheim


def imported(home: Path, work: Path, *args: str) -> str:
    """The import log (``-X importtime``) of ``openheim ARGS``."""
    return run_openheim(home, work, *args, python=("-X", "importtime")).stderr


def test_version_run_and_acp_do_not_import_textual(home: Path, work: Path) -> None:
    with FakeLLMServer(["hi"]) as server:
        configure(home, server)
        logs = {
            "--version": imported(home, work, "--version"),
            "run": imported(home, work, "run", "hello"),
            "acp": imported(home, work, "acp"),
        }
    assert "openheim.term.render" in logs["run"] and "openheim.acp" in logs["acp"]
    for command, log in logs.items():
        assert "textual" not in log, command
        assert "openheim.chat" not in log, command


def test_without_textual_the_ui_says_what_to_install(home: Path, work: Path) -> None:
    blocker = work / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'textual' or name.startswith('textual.'):\n"
        "            raise ImportError('no textual here')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    script = (
        "import sys\n"
        "sys.stdin.isatty = lambda: True\n"
        "sys.stdout.isatty = lambda: True\n"
        "from openheim.cli.main import main\n"
        "raise SystemExit(main(['chat']))\n"
    )
    env = child_env(home)
    env["PYTHONPATH"] = f"{work}:{env.get('PYTHONPATH', '')}"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "the terminal UI needs Textual" in done.stderr
    assert "pip install 'openheim[tui]'" in done.stderr
    assert "Traceback" not in done.stderr
