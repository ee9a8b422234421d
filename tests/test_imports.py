"""Start-up stays cheap: no provider, HTTP or pydantic module is imported until needed."""

from __future__ import annotations

import json
import subprocess
import sys

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
