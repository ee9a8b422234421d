"""``import openheim`` changes no other module; the ``openheim`` program installs its two
start-up hooks (the dataclass code cache and the deferred httpx command line), and an
environment switch turns each off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

STATE = """
import json, sys
import dataclasses, httpx
from openheim.process import codecache, httpx_cli
spec = getattr(sys.modules.get("httpx._main"), "__spec__", None)
print(json.dumps({
    "code_cache": getattr(dataclasses, "exec", None) is codecache.cached_exec,
    "httpx_cli_deferred": getattr(spec, "loader", None) is httpx_cli._Loader,
}))
"""

SWITCHES = {
    "code_cache": "OPENHEIM_NO_CODE_CACHE",
    "httpx_cli_deferred": "OPENHEIM_NO_HTTPX_CLI_DEFER",
}


def state_after(before: str, env: dict[str, str] | None = None) -> dict[str, bool]:
    """Whether each hook is in place once ``before`` ran, in a fresh interpreter."""
    script = f"{before}\n{STATE}"
    environment = {k: v for k, v in os.environ.items() if k not in SWITCHES.values()}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment | (env or {}),
    )
    assert done.returncode == 0, done.stderr
    state: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return state


# As the program: ``main()`` on this process's arguments (the console script and
# ``python -m openheim`` both call it so); ``exit_now`` is kept from ending the process.
PROGRAM = """
import sys
from openheim.cli import main, process
process.exit_now = lambda code: code
sys.argv = ["openheim", "--version"]
main.main()
"""


@pytest.mark.parametrize("first", ["import openheim", "import openheim.api"])
def test_importing_openheim_patches_nothing(first: str) -> None:
    assert state_after(first) == {"code_cache": False, "httpx_cli_deferred": False}


def test_main_with_arguments_is_a_library_call_and_patches_nothing() -> None:
    code = "import contextlib, io\nfrom openheim.cli.main import main\n"
    code += "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    code += "    main(['--version'])"
    assert state_after(code) == {"code_cache": False, "httpx_cli_deferred": False}


def test_the_program_installs_both() -> None:
    assert state_after(PROGRAM) == {"code_cache": True, "httpx_cli_deferred": True}


@pytest.mark.parametrize("hook", list(SWITCHES))
@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_a_switch_turns_its_hook_off(hook: str, value: str) -> None:
    state = state_after(PROGRAM, {SWITCHES[hook]: value})
    assert state == {name: name != hook for name in SWITCHES}


@pytest.mark.parametrize("value", ["0", "false", "no", ""])
def test_a_switch_set_false_leaves_its_hook_on(value: str) -> None:
    env = dict.fromkeys(SWITCHES.values(), value)
    assert state_after(PROGRAM, env) == {"code_cache": True, "httpx_cli_deferred": True}


@pytest.mark.parametrize("name", list(SWITCHES.values()))
def test_a_switch_that_is_not_a_boolean_is_one_error_line(name: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in SWITCHES.values()}
    done = subprocess.run(
        [sys.executable, "-m", "openheim", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment | {name: "maybe"},
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"openheim: error: {name}='maybe' is not a boolean (set {name} to 1 or 0)"
    )
