"""The one place that builds the environment of child processes (shell tool, MCP servers, ...).

A child gets:

1. the variables of ``SAFE_BASE`` (names or fnmatch globs: paths, locale, terminal, temp dirs,
   toolchain locations, openheim's own settings) and those the user allows (config key
   ``shell_env_allow``, the ``allow`` argument; ``"*"`` allows everything else);
2. but never one whose name looks like it holds a secret (``is_secret_name``) or whose value
   holds a known secret value or key format (``openheim.redaction.secrets``), allowed or not;
3. plus ``extra``: variables the caller declares for this child (an MCP server's configured
   ``env``), passed as given because the user wrote them for it.

Everything else is dropped: an unknown variable may hold a credential under an innocent name.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping

from openheim.redaction.secrets import REDACTOR

SAFE_BASE: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_*",
    "PYTHON*",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "JAVA_HOME",
    "GOPATH",
    "GOROOT",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "OPENHEIM_*",
)
"""What every child inherits (unless it looks secret): enough to find programs, libraries and
the user's toolchains, and to print in the user's language."""

_SECRET_MARKERS = (
    "API_KEY",
    "APIKEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "ACCESS_KEY",
)
_SECRET_SUFFIXES = ("_KEY", "_PWD", "_PASS")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable name looks like it holds a secret."""
    upper = name.upper()
    return any(m in upper for m in _SECRET_MARKERS) or upper.endswith(_SECRET_SUFFIXES)


def _globs(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex matching any of the names or fnmatch globs (case-sensitive, as names are)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or r"(?!)")


_SAFE = _globs(SAFE_BASE)


def child_env(
    base: Mapping[str, str] | None = None,
    *,
    allow: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a child process, built from ``base`` (default: ``os.environ``).

    ``allow`` holds further names or globs to pass (``shell_env_allow``); ``extra`` is added
    last, unfiltered. See the module docstring for the rules.
    """
    env = os.environ if base is None else base
    allowed = _globs(allow)
    out = {
        name: value
        for name, value in env.items()
        if (_SAFE.match(name) or allowed.match(name))
        and not is_secret_name(name)
        and not REDACTOR.finds(value)
    }
    out.update(extra or {})
    return out
