"""One CLI run from a request: command line, environment, parser and limits put together.

``run_cli`` yields the run's text pieces and progress lines as they come, then one
``CliOutcome`` (final text, usage, session id, cost). For OpenCode it writes the containment
config to a private temporary file named by ``OPENCODE_CONFIG`` and removes it afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from openheim.cliagents.argv import (
    DEFAULT_MODEL,
    Containment,
    claude_argv,
    codex_argv,
    opencode_argv,
    opencode_config,
)
from openheim.cliagents.parse import (
    ClaudeParser,
    CliEvent,
    CliOutcome,
    CodexParser,
    OpenCodeParser,
    StreamParser,
)
from openheim.cliagents.process import DEFAULT_TIMEOUT, CliRun, stream_run
from openheim.cliagents.spec import CliSpec, cli_env


@dataclass(frozen=True)
class CliRequest:
    """What to run: which CLI (and its program), the prompt, the folder, the containment."""

    spec: CliSpec
    binary: str
    prompt: str
    cwd: Path
    containment: Containment
    model: str = DEFAULT_MODEL
    timeout: float = DEFAULT_TIMEOUT
    env_allow: tuple[str, ...] = ()


async def run_cli(request: CliRequest) -> AsyncGenerator[CliEvent | CliOutcome, None]:
    """The run's events, then its outcome; ProviderError when the CLI fails."""
    with _extra_env(request) as extra:
        parser = _parser(request)
        run = CliRun(
            name=request.spec.name,
            argv=_argv(request),
            cwd=request.cwd,
            env=cli_env(request.spec, allow=request.env_allow, extra=extra),
            prompt=request.prompt,
            timeout=request.timeout,
        )
        async with contextlib.aclosing(stream_run(run, parser)) as events:
            async for event in events:
                yield event
        yield parser.outcome


def _argv(request: CliRequest) -> list[str]:
    name = request.spec.name
    if name == "claude":
        return claude_argv(request.binary, request.containment, request.model)
    if name == "codex":
        return codex_argv(request.binary, request.containment, request.model, request.cwd)
    return opencode_argv(request.binary, request.model)


def _parser(request: CliRequest) -> StreamParser:
    name = request.spec.name
    if name == "claude":
        return ClaudeParser()
    if name == "codex":
        return CodexParser()
    return OpenCodeParser()


OPENCODE_CONTAINED: Final = {"OPENCODE_DISABLE_PROJECT_CONFIG": "1"}
"""Keeps OpenCode to the user's config and openheim's: a folder's own ``opencode.json`` would
be laid over ours (it could allow every tool), and its ``.opencode/`` could load a plugin
(code run in OpenCode's process), agents and commands."""


@contextlib.contextmanager
def _extra_env(request: CliRequest) -> Iterator[dict[str, str]]:
    """The variables openheim sets for this run: OpenCode's containment config file, and the
    switch that keeps the folder's own OpenCode config out."""
    if request.spec.name != "opencode":
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="openheim-opencode-") as folder:
        path = Path(folder) / "opencode.json"
        _write_private(path, json.dumps(opencode_config(request.containment)))
        yield {**OPENCODE_CONTAINED, "OPENCODE_CONFIG": str(path)}


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
