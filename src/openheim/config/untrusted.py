"""What an untrusted project's ``.openheim/config.toml`` may set: an explicit allow-list.

Until the user runs ``openheim trust DIR``, a project's config file is filtered key by key. Every
key of the schema (``config.schema``) has exactly one class here, and a test fails when a new key
has none, so nothing reaches the settings by having been forgotten:

- ``ALLOWED``: taken as written; it cannot run code, reach a host or widen safety.
- ``NARROWING``: taken only when it is no wider than the user's own value: a smaller limit, a
  stricter mode, a work dir further inside, more ``deny_read`` patterns, or a choice among the
  providers and models the user configured.
- ``PER_KEY``: a table whose keys are classified one by one (``[providers.NAME]``, ``[tui]``).
- ``REFUSED``: never taken. Every key that names a command, a host, a port, a path outside the
  project, a model file, a provider kind, a key, a price or a place to store data is refused.

Each key that is not taken adds one notice saying how to allow it. Values of refused keys never
appear in a notice (they may be keys or long commands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from openheim.config.checks import resolved
from openheim.config.schema import (
    DEFAULT_CLIENT_MCP_SERVERS,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_PARALLEL_SUBAGENTS,
    AcpEntry,
    CliAgentsEntry,
    CompactionEntry,
    ConfigFile,
    DiscordEntry,
    GatewayEntry,
    HookEntry,
    McpServeEntry,
    McpServerEntry,
    MemoryEntry,
    PriceEntry,
    ProviderEntry,
    ServerEntry,
    TelegramEntry,
    TuiEntry,
    WhatsAppEntry,
)
from openheim.redaction.secrets import DEFAULT_DENY_READ


class Trust(StrEnum):
    """How a key of an untrusted project's config is treated."""

    ALLOWED = "allowed"
    NARROWING = "narrowing-only"
    PER_KEY = "per-key"
    REFUSED = "refused"


A, N, P, R = Trust.ALLOWED, Trust.NARROWING, Trust.PER_KEY, Trust.REFUSED

TOP_LEVEL: dict[str, Trust] = {
    "default_provider": N, "max_iterations": N, "default_skills": A, "work_dir": N,
    "allow_shell": N, "data_dir": R, "theme_color": A, "providers": P, "mcp_servers": R,
    "memory": R, "tui": P, "prices": R, "max_cost": N, "max_tokens_per_session": N,
    "save_sessions": R, "session_log": R, "file_changes": N, "web_fetch_allow": R,
    "approval": N, "default_agent": R, "max_parallel_subagents": N, "inline_subagents": N,
    "deny_read": N, "shell_env_allow": R, "shell_sandbox": R, "shell_network": R,
    "server": R, "acp": P, "mcp_server": R, "hooks": R, "cli_agents": R, "compaction": R,
    "gateway": R, "store_url": R,
}  # fmt: skip
PROVIDER_KEYS: dict[str, Trust] = {
    "kind": R, "api_base": R, "default_model": N, "models": R, "env_var": R, "api_key": R,
    "timeout_secs": R, "max_tokens": R, "context_window": R, "thinking": R,
    "reasoning_effort": R, "max_retries": R, "fallback": R, "tool_protocol": R,
    "model_path": R, "n_ctx": R, "n_threads": R, "seed": R, "temperature": R,
    "server_command": R, "host": R, "port": R, "port_policy": R, "startup_timeout": R,
    "small": R, "tool_rounds": R, "tool_choice": R, "prefix_cache_mb": R, "cli_path": R,
    "cli_env_allow": R,
}  # fmt: skip
TUI_KEYS: dict[str, Trust] = {"theme_color": A, "theme": A, "show_thinking": A}
MCP_SERVER_KEYS = dict.fromkeys(
    ("command", "args", "env", "url", "cwd", "headers", "startup_timeout", "call_timeout"), R
)
MEMORY_KEYS = dict.fromkeys(("embedding_provider", "embedding_model", "db_path", "top_k"), R)
PRICE_KEYS = dict.fromkeys(("input", "output", "cache_read", "cache_write"), R)
CLI_AGENTS_KEYS = dict.fromkeys(("timeout_secs", "env_allow"), R)
COMPACTION_KEYS = dict.fromkeys(("threshold", "model"), R)
SERVER_KEYS = dict.fromkeys(
    ("token_file", "allowed_origins", "max_body_bytes", "max_frame_bytes", "header_timeout_secs",
     "idle_timeout_secs", "max_connections", "max_connections_per_address",
     "lease_timeout_secs"),
    R,
)  # fmt: skip
ACP_KEYS = {"client_mcp_servers": N}
MCP_SERVE_KEYS = {"schema": R}
HOOK_KEYS = dict.fromkeys(("command", "timeout", "required"), R)
GATEWAY_KEYS = dict.fromkeys(
    ("provider", "model", "models", "agent", "work_dir", "approval", "passphrase", "rate_limit",
     "rate_window_secs", "queue", "webhook_host", "webhook_port", "leader_lease_secs",
     "telegram", "discord", "whatsapp"),
    R,
)  # fmt: skip
TELEGRAM_KEYS = dict.fromkeys(("token", "api_base", "allowed_users", "mode", "webhook_secret"), R)
DISCORD_KEYS = dict.fromkeys(("token", "api_base", "gateway_url", "allowed_users"), R)
WHATSAPP_KEYS = dict.fromkeys(
    ("token", "app_secret", "verify_token", "phone_number_id", "api_base", "allowed_users"), R
)
"""The gateway answers strangers on chat platforms: no project config may configure it."""

CLASSES: dict[type[Any], dict[str, Trust]] = {
    ConfigFile: TOP_LEVEL,
    ProviderEntry: PROVIDER_KEYS,
    TuiEntry: TUI_KEYS,
    McpServerEntry: MCP_SERVER_KEYS,
    MemoryEntry: MEMORY_KEYS,
    PriceEntry: PRICE_KEYS,
    ServerEntry: SERVER_KEYS,
    AcpEntry: ACP_KEYS,
    McpServeEntry: MCP_SERVE_KEYS,
    CompactionEntry: COMPACTION_KEYS,
    HookEntry: HOOK_KEYS,
    CliAgentsEntry: CLI_AGENTS_KEYS,
    GatewayEntry: GATEWAY_KEYS,
    TelegramEntry: TELEGRAM_KEYS,
    DiscordEntry: DISCORD_KEYS,
    WhatsAppEntry: WHATSAPP_KEYS,
}
"""Every table of the schema and the class of each of its keys."""


@dataclass(frozen=True)
class Context:
    """What a project value is compared with: the user's own table at the same place (None
    when the user has none there), the project folder, and the work dir before the project."""

    user: Mapping[str, Any] | None
    root: Path
    work_dir: Path


_REFUSE = object()
Narrower = Callable[[Any, Context], Any]
"""Returns the value to take (possibly combined with the user's), or ``_REFUSE``."""


def _user(ctx: Context, key: str, default: Any = None) -> Any:
    value = (ctx.user or {}).get(key)
    return default if value is None else value


def _at_most(key: str, default: float | None) -> Narrower:
    """A limit that may only go down (None, no limit, is the widest)."""

    def narrow(value: Any, ctx: Context) -> Any:
        limit = _user(ctx, key, default)
        return value if limit is None or value <= limit else _REFUSE

    return narrow


def _off_unless(key: str) -> Narrower:
    """A switch an untrusted project may turn off, but on only when the user has it on."""
    return lambda value, ctx: value if value is False or _user(ctx, key) is True else _REFUSE


def _ranked(key: str, order: tuple[str, ...], default: str) -> Narrower:
    """A mode that may only move right in ``order`` (towards the stricter end)."""

    def narrow(value: Any, ctx: Context) -> Any:
        current = _user(ctx, key, default)
        return value if order.index(value) >= order.index(current) else _REFUSE

    return narrow


def _own_provider(value: Any, ctx: Context) -> Any:
    """Only a provider the user configured a table for (or already chose)."""
    users = _user(ctx, "providers", {})
    return value if value in users or value == _user(ctx, "default_provider") else _REFUSE


def _own_model(value: Any, ctx: Context) -> Any:
    """Only a model the user's table of this provider names (``models`` or ``default_model``)."""
    if ctx.user is None:
        return _REFUSE
    known = [*_user(ctx, "models", []), _user(ctx, "default_model")]
    return value if value in known else _REFUSE


def _inside_work_dir(value: Any, ctx: Context) -> Any:
    """A work dir that resolves inside the current one (checked for existence later)."""
    proposed = resolved(value, ctx.root, "work_dir")
    return value if proposed.is_relative_to(ctx.work_dir) else _REFUSE


def _more_deny_read(value: Any, ctx: Context) -> Any:
    """The project's patterns added to the user's (or to the defaults), never replacing them."""
    base = _user(ctx, "deny_read", list(DEFAULT_DENY_READ))
    return list(dict.fromkeys([*base, *value]))


NARROWERS: dict[str, tuple[Narrower, str]] = {
    "default_provider": (_own_provider, "it is not a provider of your own config"),
    "max_iterations": (
        _at_most("max_iterations", DEFAULT_MAX_ITERATIONS),
        "it may only lower your limit",
    ),
    "work_dir": (_inside_work_dir, "it is not inside the current work dir"),
    "allow_shell": (_off_unless("allow_shell"), "it may only turn the shell off"),
    "max_cost": (_at_most("max_cost", None), "it may only lower your budget"),
    "max_tokens_per_session": (
        _at_most("max_tokens_per_session", None),
        "it may only lower your budget",
    ),
    "file_changes": (
        _ranked("file_changes", ("direct", "staged"), "direct"),
        "it may only make file changes staged",
    ),
    "approval": (
        _ranked("approval", ("auto", "edits", "ask", "deny"), "ask"),
        "it may only make approval stricter",
    ),
    "max_parallel_subagents": (
        _at_most("max_parallel_subagents", DEFAULT_PARALLEL_SUBAGENTS),
        "it may only lower your limit",
    ),
    "inline_subagents": (_off_unless("inline_subagents"), "it may only turn them off"),
    "deny_read": (_more_deny_read, ""),
    "acp.client_mcp_servers": (
        _ranked("client_mcp_servers", ("stdio", "http", "none"), DEFAULT_CLIENT_MCP_SERVERS),
        "it may only allow fewer kinds of client MCP servers",
    ),
    "providers.default_model": (
        _own_model,
        "it is not a model your own config names for this provider",
    ),
}
"""The check of each NARROWING key (nested keys by table name and key), and why it refuses."""

_TABLES: dict[str, tuple[dict[str, Trust], bool]] = {
    "providers": (PROVIDER_KEYS, True),
    "tui": (TUI_KEYS, False),
    "acp": (ACP_KEYS, False),
}
"""The PER_KEY tables: their keys' classes, and whether they hold named entries."""


def untrusted_view(project: Mapping[str, Any], ctx: Context, notices: list[str]) -> dict[str, Any]:
    """The part of ``project`` an untrusted project may set, compared with the user's config
    (``ctx.user``); each key left out adds one notice."""
    why = f"run `openheim trust {ctx.root}` to allow it"
    out: dict[str, Any] = {}
    for key, value in project.items():
        kind = TOP_LEVEL[key]
        if kind is Trust.PER_KEY:
            table = _table(key, value, ctx, notices, why)
            if table:
                out[key] = table
        else:
            kept = _decide(key, key, kind, value, ctx, notices, why)
            if kept is not _REFUSE:
                out[key] = kept
    return out


def _table(
    key: str, value: Mapping[str, Any], ctx: Context, notices: list[str], why: str
) -> dict[str, Any]:
    """The keys of a PER_KEY table (of each of its named entries) that may be taken."""
    classes, named = _TABLES[key]
    user_table = _user(ctx, key, {})
    entries = value.items() if named else [(None, value)]
    out: dict[str, Any] = {}
    for name, entry in entries:
        base = user_table.get(name) if named else user_table
        sub = Context(base, ctx.root, ctx.work_dir)
        prefix = f"{key}.{name}" if named else key
        kept = {}
        for inner, item in entry.items():
            where = f"{prefix}.{inner}"
            decided = _decide(where, f"{key}.{inner}", classes[inner], item, sub, notices, why)
            if decided is not _REFUSE:
                kept[inner] = decided
        if kept and named:
            out[str(name)] = kept
        elif kept:
            out.update(kept)
    return out


def _decide(
    where: str, rule: str, kind: Trust, value: Any, ctx: Context, notices: list[str], why: str
) -> Any:
    """The value to take for the key at ``where`` (``rule`` names its narrower), or _REFUSE."""
    if kind is Trust.ALLOWED:
        return value
    if kind is Trust.NARROWING:
        narrow, reason = NARROWERS[rule]
        kept = narrow(value, ctx)
        if kept is not _REFUSE:
            return kept
        notices.append(
            f"ignored {where} = {value!r} from the untrusted project config: {reason} ({why})"
        )
        return _REFUSE
    notices.append(
        f"ignored {where} from the untrusted project config: an untrusted project may not set "
        f"it ({why})"
    )
    return _REFUSE
