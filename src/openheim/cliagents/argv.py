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
--cd DIR`` (``workspace-write`` for an agent, ``read-only`` for a model), with ``mcp_servers``
emptied, web search off and the features that reach past the folder off (the shell tool too
for a model); ``--ask-for-approval`` goes before ``exec``, which does not take it. OpenCode:
``run --format json`` with a config file in ``OPENCODE_CONFIG`` whose ``permission`` table
denies every tool (``"*"``) but reading, searching and, for an agent, editing, and whose
hidden ``title`` agent is off (it would send the whole prompt to the model a second time, on
usage no one counts); ``OPENCODE_DISABLE_PROJECT_CONFIG`` keeps the folder's own
``opencode.json`` and ``.opencode/`` (plugins, agents, commands) out (``run.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from openheim.errors import ProviderError


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
CODEX_OFF: Final = (
    "multi_agent",
    "goals",
    "apps",
    "plugins",
    "browser_use",
    "computer_use",
    "image_generation",
    "hooks",
)
"""Codex features turned off: sub-agents, plugins, browsers and hooks reach past the folder.
Set as config values, which a Codex without the feature ignores (``--disable`` would fail)."""
CODEX_SHELL: Final = ("shell_tool", "unified_exec")
"""Also off in ``MODEL`` containment: no shell tool at all."""
MODEL_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]{0,199}")
"""A model name a CLI is given (allow-listed: it goes on the command line, where one starting
with ``-`` would read as a flag)."""
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
    off = CODEX_OFF if containment.tools else (*CODEX_OFF, *CODEX_SHELL)
    features = [arg for name in off for arg in ("--config", f"features.{name}=false")]
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
        "--config",
        'web_search="disabled"',
        *features,
        *_model_flag("--model", model),
        "-",
    ]


def opencode_argv(binary: str, model: str) -> list[str]:
    """OpenCode's ``run`` reading its prompt from stdin, printing JSON events."""
    return [binary, "run", "--format", "json", *_model_flag("--model", model)]


def opencode_config(containment: Containment) -> dict[str, Any]:
    """The config written to ``OPENCODE_CONFIG`` (laid over the user's own by OpenCode)."""
    permission = {"*": "deny"}
    if containment.tools:
        permission |= dict.fromkeys(("read", "glob", "grep", "list"), "allow")
    if containment.writes:
        permission["edit"] = "allow"
    return {
        "autoupdate": False,
        "share": "disabled",
        "permission": permission,
        "agent": {"title": {"disable": True}},
    }


def _model_flag(flag: str, model: str) -> Sequence[str]:
    if not model or model == DEFAULT_MODEL:
        return ()
    if not MODEL_NAME.fullmatch(model):
        raise ProviderError(
            f"the model name {model[:60]!r} is not one a CLI takes",
            hint="use letters, digits and . _ : / @ + - [ ], starting with a letter or digit",
        )
    return (flag, model)
