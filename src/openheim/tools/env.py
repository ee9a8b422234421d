"""The one place that builds the environment of child processes (shell tool, MCP servers, ...)."""

from __future__ import annotations

import os
from collections.abc import Mapping

_SECRET_MARKERS = ("API_KEY", "APIKEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable name looks like it holds a secret."""
    upper = name.upper()
    return any(marker in upper for marker in _SECRET_MARKERS)


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without variables that hold secrets (API keys, tokens)."""
    env = os.environ if base is None else base
    return {k: v for k, v in env.items() if not is_secret_name(k)}
