"""The shape of ``config.toml``: every key the Rust Openheim accepts, plus ours.

Each table is a dataclass; ``typed.from_mapping`` checks a parsed file against it and rejects
unknown keys with the nearest valid one, and numbers outside their ``Bounds``. ``None`` means
"not set here" so files can be layered. Every key is also classified for untrusted projects in
``config.untrusted``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, get_args

from openheim.formats.typed import Bounds

DAY_SECS = 86_400.0
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_PARALLEL_SUBAGENTS = 4
MAX_ITERATIONS_LIMIT = 100_000
Seconds = Annotated[float | None, Bounds(0, DAY_SECS, above=True)]
Count = Annotated[int | None, Bounds(1)]
Dollars = Annotated[float | None, Bounds(0, 1e9)]
ApprovalMode = Literal["ask", "edits", "auto", "deny"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
"""Every approval mode, the one list of them, in the order Shift+Tab cycles through them."""
MODE_NAMES: dict[str, str] = {"edits": "auto for edits"}
"""How a mode is named to a person where its id is not plain words."""


def mode_name(mode: str) -> str:
    """``mode`` as a person reads it: "auto for edits" for ``edits``, else the id itself."""
    return MODE_NAMES.get(mode, mode)


@dataclass(frozen=True)
class ProviderEntry:
    """``[providers.NAME]``: one model endpoint."""

    kind: str | None = None
    api_base: str | None = None
    default_model: str | None = None
    models: list[str] = field(default_factory=list)
    env_var: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_secs: Seconds = None
    max_tokens: Count = None
    context_window: Count = None
    thinking: Annotated[str | int | None, Bounds(0)] = None
    reasoning_effort: str | None = None
    max_retries: Annotated[int | None, Bounds(0, 100)] = None
    fallback: list[str] = field(default_factory=list)
    tool_protocol: Literal["native", "envelope"] | None = None
    model_path: str | None = None
    n_ctx: Annotated[int | None, Bounds(0)] = None
    n_threads: Annotated[int | None, Bounds(1, 4096)] = None
    seed: int | None = None
    temperature: Annotated[float | None, Bounds(0, 100)] = None
    server_command: list[str] = field(default_factory=list)
    host: str | None = None
    port: Annotated[int | None, Bounds(1, 65_535)] = None
    port_policy: Literal["fail", "reuse", "next-free"] | None = None
    startup_timeout: Seconds = None
    small: bool | None = None
    tool_rounds: Annotated[int | None, Bounds(1, 1000)] = None
    tool_choice: Literal["auto", "required"] | None = None
    prefix_cache_mb: Annotated[int | None, Bounds(0, 1_000_000)] = None
    cli_path: str | None = None
    cli_env_allow: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class McpServerEntry:
    """``[mcp_servers.NAME]``: a stdio command or a streamable HTTP url."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    cwd: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    startup_timeout: Seconds = None
    call_timeout: Seconds = None


@dataclass(frozen=True)
class MemoryEntry:
    """``[memory]``: long-term memory storage and optional embeddings."""

    embedding_provider: str | None = None
    embedding_model: str | None = None
    db_path: str | None = None
    top_k: Annotated[int, Bounds(1, 1000)] = 5


@dataclass(frozen=True)
class TuiEntry:
    """``[tui]``: terminal UI settings."""

    theme_color: str | None = None
    theme: str | None = None
    """The terminal UI's theme by name (``openheim`` writes it when a theme is picked)."""
    show_thinking: bool | None = None
    """Whether the terminal UI streams the model's thinking as it arrives (default true)."""


@dataclass(frozen=True)
class ServerEntry:
    """``[server]``: ``openheim serve`` (taken from the user's own config only)."""

    token_file: str | None = None
    allowed_origins: list[str] = field(default_factory=list)
    max_body_bytes: Annotated[int | None, Bounds(1024, 1 << 30)] = None
    max_frame_bytes: Annotated[int | None, Bounds(1024, 1 << 30)] = None
    header_timeout_secs: Annotated[float | None, Bounds(0, 3600, above=True)] = None
    """Seconds a connection has to send a complete request head."""
    idle_timeout_secs: Annotated[float | None, Bounds(0, 3600, above=True)] = None
    """Seconds a kept-alive connection may sit idle between requests."""
    max_connections: Annotated[int | None, Bounds(1, 1_000_000)] = None
    max_connections_per_address: Annotated[int | None, Bounds(1, 1_000_000)] = None
    lease_timeout_secs: Annotated[float | None, Bounds(1, 3600)] = None
    """Seconds without a heartbeat before a prompt lease held on another machine is stale
    (PostgreSQL store; default 10): how soon a dead replica's sessions go on elsewhere."""


ClientMcpServers = Literal["stdio", "http", "none"]
"""Which MCP servers an ACP client may hand a session: ``stdio`` (commands too), ``http`` (only
HTTP servers), ``none``."""
DEFAULT_CLIENT_MCP_SERVERS: ClientMcpServers = "http"


@dataclass(frozen=True)
class AcpEntry:
    """``[acp]``: the Agent Client Protocol server (``openheim acp`` and ``/acp`` of ``serve``)."""

    client_mcp_servers: ClientMcpServers | None = None
    """Which of a client's ``mcpServers`` are started; a stdio server runs its command as the
    user, so only HTTP ones are by default."""


Secret = str | None
"""Where a secret comes from: ``env:NAME`` or ``file:PATH``, never the secret itself."""


@dataclass(frozen=True)
class TelegramEntry:
    """``[gateway.telegram]``: a Telegram bot."""

    token: Secret = None
    api_base: str | None = None
    allowed_users: list[str] = field(default_factory=list)
    mode: Literal["polling", "webhook"] | None = None
    webhook_secret: Secret = None


@dataclass(frozen=True)
class DiscordEntry:
    """``[gateway.discord]``: a Discord bot (gateway WebSocket in, REST out)."""

    token: Secret = None
    api_base: str | None = None
    gateway_url: str | None = None
    allowed_users: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WhatsAppEntry:
    """``[gateway.whatsapp]``: a WhatsApp Cloud API number (webhook in, Graph API out)."""

    token: Secret = None
    app_secret: Secret = None
    verify_token: Secret = None
    phone_number_id: str | None = None
    api_base: str | None = None
    allowed_users: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GatewayEntry:
    """``[gateway]``: ``openheim gateway`` (taken from the user's own config only)."""

    provider: str | None = None
    model: str | None = None
    models: list[str] = field(default_factory=list)
    agent: str | None = None
    work_dir: str | None = None
    approval: ApprovalMode | None = None
    passphrase: Secret = None
    rate_limit: Annotated[int | None, Bounds(1, 1_000_000)] = None
    rate_window_secs: Seconds = None
    queue: Annotated[int | None, Bounds(0, 100)] = None
    webhook_host: str | None = None
    webhook_port: Annotated[int | None, Bounds(0, 65_535)] = None
    leader_lease_secs: Seconds = None
    telegram: TelegramEntry | None = None
    discord: DiscordEntry | None = None
    whatsapp: WhatsAppEntry | None = None


@dataclass(frozen=True)
class CliAgentsEntry:
    """``[cli_agents]``: the coding-agent CLI tools of ``openheim mcp serve``."""

    timeout_secs: Seconds = None
    env_allow: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class McpServeEntry:
    """``[mcp_server]``: ``openheim mcp serve`` (taken from the user's own config only)."""

    schema: str | None = None
    """A JSON schema file (relative to the config's folder) for the JSON-schema tools, used when
    a call passes no ``schema``."""


@dataclass(frozen=True)
class CompactionEntry:
    """``[compaction]``: when and by which model a session's older turns are summarised."""

    threshold: Annotated[float, Bounds(0, 1)] = 0.8
    """Share of the context window that triggers a compaction; 0 turns it off."""
    model: str | None = None
    """The model (of the session's provider) that writes summaries; default the session's."""


@dataclass(frozen=True)
class PriceEntry:
    """``[prices."MODEL"]``: US dollars per million tokens."""

    input: Annotated[float, Bounds(0, 1e9)]
    output: Annotated[float, Bounds(0, 1e9)]
    cache_read: Dollars = None
    cache_write: Dollars = None


HOOK_EVENTS: tuple[str, ...] = (
    "session_start", "session_end", "user_prompt", "pre_tool", "post_tool", "file_write", "stop",
)  # fmt: skip
"""The events a ``[hooks]`` entry may name."""
HOOK_ALIASES: dict[str, str] = {
    "on-session-start": "session_start",
    "on-session-end": "session_end",
    "on-file-write": "file_write",
}
"""Yips' hook names, accepted for the events they mean."""
HOOK_TIMEOUT_MAX = 120.0


@dataclass(frozen=True)
class HookEntry:
    """``[hooks] EVENT = { command = "...", timeout = 10, required = false }``."""

    command: str
    timeout: Annotated[float | None, Bounds(0, HOOK_TIMEOUT_MAX, above=True)] = None
    required: bool = False
    """Only for ``pre_tool``: a failing hook denies the call instead of warning."""


@dataclass(frozen=True)
class ConfigFile:
    """One parsed ``config.toml`` (user or project)."""

    default_provider: str | None = None
    max_iterations: Annotated[int | None, Bounds(1, MAX_ITERATIONS_LIMIT)] = None
    default_skills: list[str] | None = None
    work_dir: str | None = None
    allow_shell: bool | None = None
    data_dir: str | None = None
    store_url: str | None = None
    """``postgresql://...``: sessions in PostgreSQL instead of ``data_dir`` (user config only)."""
    theme_color: str | None = None
    providers: dict[str, ProviderEntry] = field(default_factory=dict)
    mcp_servers: dict[str, McpServerEntry] = field(default_factory=dict)
    memory: MemoryEntry | None = None
    tui: TuiEntry | None = None
    server: ServerEntry | None = None
    acp: AcpEntry | None = None
    cli_agents: CliAgentsEntry | None = None
    mcp_server: McpServeEntry | None = None
    compaction: CompactionEntry | None = None
    gateway: GatewayEntry | None = None
    prices: dict[str, PriceEntry] = field(default_factory=dict)
    max_cost: Dollars = None
    max_tokens_per_session: Count = None
    save_sessions: bool | None = None
    session_log: Literal["markdown"] | None = None
    file_changes: Literal["direct", "staged"] | None = None
    web_fetch_allow: list[str] = field(default_factory=list)
    approval: ApprovalMode | None = None
    default_agent: str | None = None
    max_parallel_subagents: Annotated[int | None, Bounds(1, 64)] = None
    inline_subagents: bool | None = None
    deny_read: list[str] | None = None
    shell_env_allow: list[str] = field(default_factory=list)
    shell_sandbox: Literal["auto", "require", "off"] | None = None
    shell_network: bool | None = None
    hooks: dict[str, str | HookEntry] = field(default_factory=dict)
