"""Which CLIs openheim can run, where their programs are, and what environment they get.

A CLI's program is, in order: the path the caller configured (a provider's ``cli_path``), the
path in the CLI's own variable (``CC_ADAPTER_CLAUDE_BIN``, ``CODEX_ADAPTER_BIN``,
``OPENCODE_ADAPTER_BIN``), then its name on ``PATH``. A configured path that is not an
executable file is an error, never a silent fall back to ``PATH``.

A CLI gets the scrubbed environment every child gets (``child_env``), plus its own variables
(an allow-list of names per CLI, e.g. ``ANTHROPIC_*`` for Claude Code, and any the user adds):
they hold the credentials and endpoints the CLI itself was set up with, which a coding agent
needs and no other child gets.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from openheim.errors import ConfigError
from openheim.process.child_env import child_env, is_secret_name
from openheim.process.logs import register_secret

CliName = Literal["claude", "codex", "opencode"]


@dataclass(frozen=True)
class CliSpec:
    """One CLI: its name, its program on ``PATH``, the variable that overrides the program's
    path, and the variables (names or globs) passed through to it."""

    name: CliName
    program: str
    bin_env: str
    passed: tuple[str, ...]


CLAUDE: Final = CliSpec(
    "claude", "claude", "CC_ADAPTER_CLAUDE_BIN", ("ANTHROPIC_*", "CLAUDE_*", "DISABLE_*")
)
CODEX: Final = CliSpec("codex", "codex", "CODEX_ADAPTER_BIN", ("CODEX_*", "OPENAI_*"))
OPENCODE: Final = CliSpec("opencode", "opencode", "OPENCODE_ADAPTER_BIN", ("OPENCODE_*",))
SPECS: Final[dict[CliName, CliSpec]] = {s.name: s for s in (CLAUDE, CODEX, OPENCODE)}


def find_binary(
    spec: CliSpec, env: Mapping[str, str] | None = None, configured: str | None = None
) -> str | None:
    """The CLI's program as an absolute path, or None when it is not installed.

    Raises ConfigError when ``configured`` or the CLI's variable names something that is not
    an executable file."""
    env = os.environ if env is None else env
    for source, raw in (
        (f"cli_path of {spec.name}", configured),
        (spec.bin_env, env.get(spec.bin_env)),
    ):
        if raw:
            return _executable(Path(raw).expanduser(), source)
    found = shutil.which(spec.program, path=env.get("PATH", os.defpath))
    return None if found is None else str(Path(found).absolute())


def _executable(path: Path, source: str) -> str:
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(
            f"{source} names {path}, which is not an executable file",
            hint=f"point {source} at the CLI's program, or unset it to look the CLI up on PATH",
        )
    return str(path.absolute())


def cli_env(
    spec: CliSpec,
    base: Mapping[str, str] | None = None,
    *,
    allow: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The CLI's environment: every child's scrubbed one, the CLI's own variables from
    ``base`` (secret-looking values among them registered for redaction), then ``extra``."""
    env = os.environ if base is None else base
    patterns = (*spec.passed, *allow)
    own = {
        name: value
        for name, value in env.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }
    for name, value in own.items():
        if is_secret_name(name) and value:
            register_secret(value)
    return child_env(env, extra={**own, **(extra or {})})
