"""``openheim init``: write a commented ``config.toml`` and a ``system.md``; never overwrite."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openheim.config.load import openheim_home
from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write
from openheim.prompts.builder import DEFAULT_IDENTITY
from openheim.term import exit_codes

CONFIG_TEMPLATE = """\
# openheim configuration. Every key is optional; see docs/configuration.md.
# A project's own .openheim/config.toml overrides this file, but may only narrow safety
# settings until you run `openheim trust` in that project.

# Provider used when --provider is not given (a [providers.NAME] table below, or a built-in:
# openai, anthropic, gemini, openrouter, ollama).
# default_provider = "openai"

# Model calls allowed per prompt.
max_iterations = 10

# Offer the execute_command shell tool to the model.
allow_shell = false

# Tool approvals: "ask" (default; denied when there is no terminal), "auto" or "deny".
# Rules live in permissions.toml next to this file (see `openheim permissions --help`).
approval = "ask"

# "staged": the model previews file changes as diffs and applies them by token.
# file_changes = "direct"

# Directory the agent may read and write (default: where openheim is started).
# work_dir = "/path/to/project"

# Where sessions, skills and agents live (default: this folder).
# data_dir = "/path/to/data"

# Skills loaded in every new session.
# default_skills = []

# --- Providers -------------------------------------------------------------------------
# kind is inferred from the name (openai, anthropic, gemini); any other name means an
# OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, ...).
# Prefer env_var over an inline api_key.

# [providers.openai]
# api_base = "https://api.openai.com/v1"
# default_model = "gpt-4.1-mini"
# models = ["gpt-4.1-mini", "gpt-4.1"]
# env_var = "OPENAI_API_KEY"
# timeout_secs = 120      # connect timeout and the longest silence between streamed chunks
# max_tokens = 4096

# [providers.local]
# kind = "openai_compatible"
# api_base = "http://127.0.0.1:8080/v1"
# default_model = "my-model"

# --- MCP servers (tools appear as server__tool) -------------------------------------
# [mcp_servers.filesystem]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
# [mcp_servers.remote]
# url = "http://127.0.0.1:8080/mcp"

# [tui]
# theme_color = "cyan"
"""


def init_command(args: argparse.Namespace) -> int:
    target = Path(args.dir).expanduser() if args.dir else openheim_home()
    files = {
        target / "config.toml": CONFIG_TEMPLATE,
        target / "system.md": DEFAULT_IDENTITY + "\n",
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise ConfigError(
            f"refusing to overwrite {', '.join(existing)}",
            hint="edit the existing files, or move them away and run `openheim init` again",
        )
    target.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        atomic_write(path, text.encode("utf-8"))
        sys.stdout.write(f"wrote {path}\n")
    return exit_codes.OK
