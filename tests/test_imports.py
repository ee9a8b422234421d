"""Start-up stays cheap: no provider, HTTP or pydantic module is imported until needed, and no
command imports a surface, SDK or feature it does not use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from openheim.envelope import protocol_for
from openheim.errors import ConfigError
from openheim.providers import known_kinds
from openheim.providers.base import ProviderSettings
from openheim.runtime.provider import _speaks_envelope
from openheim.testing import FakeLLMServer

HEAVY = ("httpx", "httpx_sse", "pydantic", "anyio", "openheim.providers.openai_chat", "ssl")


def modules_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_openheim_is_light() -> None:
    loaded = modules_after("import openheim")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_version_command_is_light() -> None:
    loaded = modules_after(
        "from openheim.cli.main import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--version'])"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_version_output() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "openheim", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    import openheim

    assert out.stdout.strip() == f"openheim {openheim.__version__}"


def test_public_names_resolve_lazily() -> None:
    import openheim

    assert openheim.Agent.__name__ == "Agent"
    assert callable(openheim.tool)


def test_the_runtime_face_loads_its_namespaces_on_first_use() -> None:
    loaded = modules_after("import openheim.runtime")
    assert "openheim.runtime.structured" not in loaded
    assert "jsonschema" not in loaded
    after = modules_after("from openheim.runtime import structured")
    assert {"openheim.runtime.structured", "jsonschema"} <= after


def test_every_name_the_runtime_face_offers_resolves() -> None:
    import openheim.runtime as face

    for name in face.__all__:
        assert getattr(face, name) is not None, name
    assert face.commands.__name__ == "openheim.runtime.commands"
    with pytest.raises(AttributeError, match="has no attribute 'assembly_'"):
        _ = face.assembly_


# What a real ``openheim`` process imported, read from ``sys.modules`` as it exits.

SURFACES = (
    "textual",
    "openheim.tui",
    "starlette",
    "uvicorn",
    "openheim.server",
    "openheim.gateway",
)
"""The terminal UI and the server: no other command may import them."""
UNUSED_BY_RUN = (
    *SURFACES,
    "mcp",
    "openheim.mcp",
    "acp",
    "openheim.acp",
    "llama_cpp",
    "openheim.providers.llama_cpp",
    "openheim.envelope",
    "openheim.store.importer",
    "openheim.safety.staging",
    "openheim.safety.risk",
    "openheim.tools.builtin.shell",
    "openheim.skills.frontmatter",
    "openheim.safety.html_text",
    "difflib",
    "rich",
    "click",
    "pygments",
    "httpcore",
    "anyio",
    "h11",
)
"""What ``openheim run`` with a hosted provider and nothing else configured never uses (its
model answers without calling a tool)."""

RECORDER = """\
import atexit, json, os, sys

def _record():
    with open(os.environ["OPENHEIM_TEST_MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)

atexit.register(_record)
"""


def within(loaded: set[str], packages: Sequence[str]) -> list[str]:
    """The modules of ``loaded`` that are one of ``packages`` or inside one."""
    return sorted(m for m in loaded if any(m == p or m.startswith(f"{p}.") for p in packages))


def modules_of_command(
    tmp_path: Path, *args: str, stdin: str = "", home: Path | None = None
) -> set[str]:
    """``python -m openheim ARGS`` run to its end; the modules it had imported then.

    A ``sitecustomize`` on ``PYTHONPATH`` records ``sys.modules`` at exit, so modules that
    ``importlib`` loads (the provider registry, lazy package attributes) count too."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(RECORDER)
    record = tmp_path / "modules.json"
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env = {k: v for k, v in env.items() if not k.startswith("OPENHEIM_")}
    env |= {"PYTHONPATH": path, "OPENHEIM_TEST_MODULES": str(record)}
    env |= {"OPENHEIM_HOME": str(home or tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "openheim", *args],
        cwd=tmp_path,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(record.read_text()))


def test_run_imports_only_what_it_uses(tmp_path: Path, home: Path) -> None:
    with FakeLLMServer(default="ok") as server:
        (home / "config.toml").write_text(
            'default_provider = "fake"\n[providers.fake]\nkind = "openai_compatible"\n'
            f'api_base = "{server.base_url}"\ndefault_model = "fake-model"\n'
        )
        loaded = modules_of_command(tmp_path, "run", "hi", home=home)
    assert "openheim.providers.openai_chat" in loaded  # the recorder saw the run
    assert "httpx" in loaded
    assert within(loaded, UNUSED_BY_RUN) == []


def test_version_imports_no_surface(tmp_path: Path) -> None:
    loaded = modules_of_command(tmp_path, "--version")
    assert "openheim.cli.main" in loaded
    assert within(loaded, SURFACES) == []


def test_acp_imports_no_other_surface(tmp_path: Path) -> None:
    """``openheim acp`` until its client closes stdin, having asked nothing."""
    loaded = modules_of_command(tmp_path, "acp")
    assert "openheim.acp.server" in loaded
    assert within(loaded, SURFACES) == []


def test_httpx_loads_without_its_command_line(tmp_path: Path) -> None:
    """``openheim.process.httpx_cli`` keeps click, rich and pygments out, and ``httpx.main`` and the
    names of ``httpx._main`` still reach the real module."""
    loaded = modules_after(
        "from openheim.process import httpx_cli\nhttpx_cli.defer()\nimport httpx\n"
        "assert httpx.main.__name__ == '_main' and callable(httpx.main)\n"
        "import httpx._main\n"
        "assert not hasattr(httpx._main, '__file__')\n"
        "assert 'rich' not in sys.modules\n"
        "from httpx._main import print_help\n"
        "assert print_help.__module__ == 'httpx._main'\n"
        "assert sys.modules['httpx._main'].__file__.endswith('_main.py')"
    )
    assert "rich" in loaded  # the real module came once a name of it was asked for


def test_stand_in_is_not_installed_over_an_imported_httpx() -> None:
    loaded = modules_after(
        "import httpx\nfrom openheim.process import httpx_cli\nhttpx_cli.defer()\n"
        "assert sys.modules['httpx._main'].__file__.endswith('.py')"
    )
    assert "httpx._main" in loaded


@pytest.mark.parametrize("protocol", [None, "native", "envelope", "telepathy"])
def test_the_envelope_shortcut_agrees_with_protocol_for(protocol: str | None) -> None:
    """``build_provider`` decides a hosted kind speaks native tools without importing the
    envelope package; for every kind that is ``protocol_for``'s answer (or its error)."""
    for kind in known_kinds():
        chosen = ProviderSettings("p", kind, "http://127.0.0.1:9/v1", "m", tool_protocol=protocol)
        try:
            expected: bool | type[ConfigError] = protocol_for(kind, protocol) == "envelope"
        except ConfigError:
            expected = ConfigError
        try:
            got: bool | type[ConfigError] = _speaks_envelope(chosen)
        except ConfigError:
            got = ConfigError
        assert got == expected, kind


def gc_state_after(code: str) -> dict[str, int]:
    """The collector's state at exit (enabled, frozen objects) of ``python -c code``."""
    script = (
        "import atexit, gc, json\n"
        "atexit.register(lambda: print(json.dumps("
        "{'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()})))\n"
        f"{code}"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    state: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return state


def test_the_program_freezes_what_it_made() -> None:
    """Run as the program, ``main`` leaves what is alive frozen at exit: the final collections
    have nothing to walk."""
    state = gc_state_after(
        "import sys\nfrom openheim.cli.main import main\n"
        "sys.argv = ['openheim', '--version']\nmain()"
    )
    assert state["frozen"] > 1000


def test_main_called_with_arguments_leaves_the_collector_alone() -> None:
    state = gc_state_after(
        "import contextlib\nfrom openheim.cli.main import main\n"
        "with contextlib.suppress(SystemExit):\n    main(['--version'])"
    )
    assert state == {"enabled": True, "frozen": 0}
