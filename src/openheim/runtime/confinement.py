"""What confines a session's tools, held once by the sessions of one configuration.

Every session makes its path sandbox, secret policy (``deny_read``), shell confinement and
child environment afresh when it opens, so each reflects the files and variables as they are
then (``~``, symlinks, the work dir's real path, ``os.environ``). Each is then swapped for an
equal one an earlier session made, if there is one, so a server's sessions of one
configuration hold one of each instead of hundreds of copies.

Sharing them is safe because none changes once made: ``PathSandbox`` keeps only its roots,
``SecretPolicy`` its compiled patterns, ``ShellSandbox`` is frozen, and the environment is
handed out read-only (``MappingProxyType``; whoever needs to add to it copies it, as hooks
and the shell tool do). Equal values decide every path and start every child exactly as the
fresh ones would.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar, cast

from openheim.config.load import Settings
from openheim.process.child_env import child_env
from openheim.redaction.secrets import SecretPolicy
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import SandboxMode, ShellSandbox

_T = TypeVar("_T")
_KEPT: dict[tuple[object, ...], object] = {}
"""The values made so far, by what they consist of (a handful per configuration)."""
_MOST_KEPT = 256


def confinement(
    settings: Settings, work_dir: Path
) -> tuple[PathSandbox, SecretPolicy, ShellSandbox, Mapping[str, str]]:
    """The path sandbox of ``work_dir``, the secret policy, the shell's confinement and the
    child environment of ``settings``: made now, each then replaced by an equal one kept."""
    sandbox = PathSandbox(work_dir)
    policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
    mode = cast("SandboxMode", settings.shell_sandbox)
    shell = ShellSandbox(mode, settings.shell_network, policy.fixed_paths())
    env = child_env(allow=settings.shell_env_allow)
    return (
        _kept(("sandbox", sandbox.roots), sandbox),
        _kept(("policy", policy.deny_read, policy.resolved), policy),
        _kept(("shell", shell), shell),
        _kept(("env", *sorted(env.items())), MappingProxyType(env)),
    )


def _kept(key: tuple[object, ...], value: _T) -> _T:
    """The value kept under ``key``, else ``value``, kept from now on."""
    if key not in _KEPT and len(_KEPT) >= _MOST_KEPT:
        _KEPT.clear()
    return cast("_T", _KEPT.setdefault(key, value))
