"""Each CLI's command line, with the flags that keep it contained.

The prompt (a system prompt included) never appears here: it goes to the CLI on stdin, so no
prompt can run past the system's argument-length limit or show in the process list. Two
containments exist:

- ``AGENT`` (the MCP tools): the CLI works as a coding agent in its folder. It may read and
  edit files there; it runs no shell command, fetches nothing from the web, starts no
  sub-agent and loads no MCP server.
- ``MODEL`` (the provider kinds): the CLI is only a model. It gets no tool at all, and its
  own sandbox (Codex) is read-only.

Claude Code: ``--print`` with ``--output-format stream-json --verbose
--include-partial-messages``, the built-in tools limited with ``--tools`` and pre-approved with
``--allowedTools``, the dangerous ones also in ``--disallowedTools``, ``--strict-mcp-config`` with
an empty ``--mcp-config``, ``--setting-sources user`` (a project's own settings cannot widen the
lists) and ``--no-session-persistence``.

Codex: ``--ask-for-approval never exec --json --sandbox MODE --skip-git-repo-check --ephemeral
--cd DIR``, with ``mcp_servers`` emptied; ``--ask-for-approval`` goes before ``exec`` (the
``exec`` subcommand does not take it). OpenCode: ``run --format json`` with a config file in
``OPENCODE_CONFIG`` whose ``permission`` table denies the shell and the web, and editing too in
``MODEL`` containment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final


@dataclass(frozen=True)
class Containment:
    """What the CLI may do: its Claude Code tools, and whether it may write files."""

    name: str
    tools: tuple[str, ...]
    writes: bool


AGENT: Final = Containment(
    "agent", ("Read", "Glob", "Grep", "LS", "Edit", "MultiEdit", "Write"), True
)
MODEL: Final = Containment("model", (), False)
CLAUDE_DENIED: Final = (
    "Bash",
    "BashOutput",
    "KillShell",
    "WebFetch",
    "WebSearch",
    "Task",
    "NotebookEdit",
)
"""Claude Code tools never allowed: they run commands, reach the network or start agents."""
DEFAULT_MODEL: Final = "default"
"""The model name that means "the CLI's own default": no model flag is passed."""


def claude_argv(binary: str, containment: Containment, model: str) -> list[str]:
    """Claude Code in print mode, streaming JSON lines."""
    argv = [
        binary,
        "--print",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--tools",
        ",".join(containment.tools),
        "--disallowedTools",
        ",".join(CLAUDE_DENIED),
        "--strict-mcp-config",
        "--mcp-config",
        json.dumps({"mcpServers": {}}),
        "--setting-sources",
        "user",
        "--no-session-persistence",
    ]
    if containment.tools:
        argv += ["--allowedTools", ",".join(containment.tools)]
    return [*argv, *_model_flag("--model", model)]


def codex_argv(binary: str, containment: Containment, model: str, cwd: Path) -> list[str]:
    """Codex's ``exec`` reading its prompt from stdin (``-``), printing JSON lines."""
    sandbox = "workspace-write" if containment.writes else "read-only"
    return [
        binary,
        "--ask-for-approval",
        "never",
        "exec",
        "--json",
        "--sandbox",
        sandbox,
        "--skip-git-repo-check",
        "--ephemeral",
        "--cd",
        str(cwd),
        "--config",
        "mcp_servers={}",
        *_model_flag("--model", model),
        "-",
    ]


def opencode_argv(binary: str, model: str) -> list[str]:
    """OpenCode's ``run`` reading its prompt from stdin, printing JSON events."""
    return [binary, "run", "--format", "json", *_model_flag("--model", model)]


def opencode_config(containment: Containment) -> dict[str, Any]:
    """The config written to ``OPENCODE_CONFIG`` (laid over the user's own by OpenCode)."""
    edit = "allow" if containment.writes else "deny"
    return {
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": edit, "bash": "deny", "webfetch": "deny"},
    }


def _model_flag(flag: str, model: str) -> Sequence[str]:
    return () if not model or model == DEFAULT_MODEL else (flag, model)
