"""How a managed llama.cpp server is started: its command line, and the settings checked first.

``llama_server`` runs the server; this module only decides what to run. The command is
``llama-server`` when it is on PATH, else ``python -m llama_cpp.server`` from the ``local``
extra, or ``server_command``; each flavour gets the flags it understands. Settings the server
cannot start with are rejected here, before anything runs.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from openheim.errors import ConfigError
from openheim.providers.base import ProviderSettings
from openheim.providers.llama_cpp import INSTALL_HINT
from openheim.providers.local_models import default_threads, fitting_context

PORT_POLICIES = ("fail", "reuse", "next-free")


def server_argv(settings: ProviderSettings, model: Path, port: int) -> list[str]:
    """The command line that serves ``model`` on ``settings.host:port``, in the flags of the
    server's flavour (``llama_cpp.server`` or llama.cpp's own ``llama-server``)."""
    command = list(settings.server_command) or default_command()
    n_ctx = str(settings.n_ctx or _context_for(model))
    threads = str(settings.n_threads or default_threads())
    alias = settings.model or model.stem
    where = ["--host", settings.host, "--port", str(port)]
    if "llama_cpp.server" in command:
        sizes = ["--n_ctx", n_ctx, "--n_threads", threads]
        return [*command, "--model", str(model), "--model_alias", alias, *where, *sizes]
    return [*command, "-m", str(model), "--alias", alias, *where, "-c", n_ctx, "-t", threads]


def default_command() -> list[str]:
    """``llama-server`` from PATH, else ``llama_cpp.server`` run by this Python."""
    found = shutil.which("llama-server")
    if found:
        return [found]
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        raise ConfigError(
            "no llama.cpp server found: llama-server is not on PATH and llama_cpp.server is not "
            "installed",
            hint=f"{INSTALL_HINT}, install llama.cpp's llama-server, or set server_command",
        )
    return [sys.executable, "-m", "llama_cpp.server"]


def check_settings(settings: ProviderSettings) -> None:
    """Reject settings the server cannot start with, before anything runs."""
    where = f"provider {settings.name!r}"
    if settings.port_policy not in PORT_POLICIES:
        raise ConfigError(
            f"{where} has port_policy {settings.port_policy!r}",
            hint=f"set port_policy to one of: {', '.join(PORT_POLICIES)}",
        )
    if settings.port is not None and not 0 < settings.port < 65536:
        raise ConfigError(
            f"{where} has port {settings.port}",
            hint="set port to a number from 1 to 65535, or leave it unset to pick a free one",
        )
    if settings.startup_timeout <= 0:
        raise ConfigError(
            f"{where} has startup_timeout {settings.startup_timeout:g}",
            hint="set startup_timeout to a positive number of seconds",
        )


def _context_for(model: Path) -> int:
    """The context to ask for when ``n_ctx`` is unset: what the model and memory allow."""
    try:
        return fitting_context(model)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read the GGUF header of {model}: {exc}",
            hint="point model_path at a valid .gguf file, or set n_ctx",
        ) from exc
