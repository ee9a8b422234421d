"""The shape of ``config.toml``: every key the Rust Openheim accepts, plus ours.

Each table is a dataclass; ``typed.from_mapping`` checks a parsed file against it and rejects
unknown keys with the nearest valid one. ``None`` means "not set here" so files can be layered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class ProviderEntry:
    """``[providers.NAME]``: one model endpoint."""

    kind: str | None = None
    api_base: str | None = None
    default_model: str | None = None
    models: list[str] = field(default_factory=list)
    env_var: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_secs: float | None = None
    max_tokens: int | None = None
    context_window: int | None = None
    thinking: str | int | None = None
    reasoning_effort: str | None = None
    max_retries: int | None = None
    fallback: list[str] = field(default_factory=list)
    tool_protocol: Literal["native", "envelope"] | None = None
    model_path: str | None = None
    n_ctx: int | None = None
    n_threads: int | None = None
    seed: int | None = None
    temperature: float | None = None
    server_command: list[str] = field(default_factory=list)
    host: str | None = None
    port: int | None = None
    port_policy: Literal["fail", "reuse", "next-free"] | None = None
    startup_timeout: float | None = None


@dataclass(frozen=True)
class McpServerEntry:
    """``[mcp_servers.NAME]``: a stdio command or a streamable HTTP url."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    cwd: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    startup_timeout: float | None = None
    call_timeout: float | None = None


@dataclass(frozen=True)
class MemoryEntry:
    """``[memory]``: long-term memory storage and optional embeddings."""

    embedding_provider: str | None = None
    embedding_model: str | None = None
    db_path: str | None = None
    top_k: int = 5


@dataclass(frozen=True)
class TuiEntry:
    """``[tui]``: terminal UI settings."""

    theme_color: str | None = None


@dataclass(frozen=True)
class PriceEntry:
    """``[prices."MODEL"]``: US dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True)
class ConfigFile:
    """One parsed ``config.toml`` (user or project)."""

    default_provider: str | None = None
    max_iterations: int | None = None
    default_skills: list[str] | None = None
    work_dir: str | None = None
    allow_shell: bool | None = None
    data_dir: str | None = None
    theme_color: str | None = None
    providers: dict[str, ProviderEntry] = field(default_factory=dict)
    mcp_servers: dict[str, McpServerEntry] = field(default_factory=dict)
    memory: MemoryEntry | None = None
    tui: TuiEntry | None = None
    prices: dict[str, PriceEntry] = field(default_factory=dict)
    max_cost: float | None = None
    max_tokens_per_session: int | None = None
    save_sessions: bool | None = None
    session_log: Literal["markdown"] | None = None
    file_changes: Literal["direct", "staged"] | None = None
    web_fetch_allow: list[str] = field(default_factory=list)
    approval: Literal["ask", "auto", "deny"] | None = None
    default_agent: str | None = None
    max_parallel_subagents: int | None = None
    inline_subagents: bool | None = None
    deny_read: list[str] | None = None
    shell_env_allow: list[str] = field(default_factory=list)
    shell_sandbox: Literal["auto", "require", "off"] | None = None
    shell_network: bool | None = None
