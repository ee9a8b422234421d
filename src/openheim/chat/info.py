"""What the chat's read-only commands show, as plain text: the configuration (secrets
masked), MCP servers, cost, memory, stored sessions and the models to pick from; and the
session exported as Markdown."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from openheim.chat.session import Chat
from openheim.chat.units import tokens
from openheim.config.load import Settings
from openheim.config.providers import offered_models, provider_entries
from openheim.errors import ConfigError
from openheim.memory.setup import open_memory
from openheim.messages import Usage
from openheim.providers.windows import context_window
from openheim.redaction.secrets import redact
from openheim.store import SessionRecord, export_markdown, open_store

_HIDDEN = {"providers", "mcp_servers", "notices", "sources", "prices", "memory"}


def config_text(settings: Settings) -> str:
    """The effective settings, one ``key = value`` a line; provider keys only as set / unset."""
    lines = [f"config files: {', '.join(str(p) for p in settings.sources) or 'none'}"]
    for field in dataclasses.fields(settings):
        if field.name not in _HIDDEN:
            lines.append(f"{field.name} = {getattr(settings, field.name)!r}")
    for name, entry in settings.providers.items():
        key = "set" if entry.api_key or entry.env_var else "from the environment"
        lines.append(
            f"[providers.{name}] kind={entry.kind or '-'} api_base={entry.api_base or '-'} "
            f"default_model={entry.default_model or '-'} key: {key}"
        )
    for name in settings.mcp_servers:
        lines.append(f"[mcp_servers.{name}]")
    return redact("\n".join(lines))


def mcp_text(chat: Chat) -> str:
    """Each configured MCP server: connected with its tool count, or why it is unavailable."""
    servers = chat.settings.mcp_servers
    if not servers:
        return "no MCP servers configured (add [mcp_servers.NAME] to config.toml)"
    names = [tool.name for tool in chat.session.agent.tools]
    failed = [n.message for n in chat.session.notices if n.kind == "mcp"]
    lines = []
    for server in servers:
        why = next((m for m in failed if server in m), None)
        count = sum(1 for name in names if name.startswith(f"{server}__"))
        lines.append(f"{server}: unavailable ({why})" if why else f"{server}: {count} tools")
    return "\n".join(lines)


def context_text(chat: Chat, last: Usage | None) -> str:
    """``8.4k / 128k ctx``: what the last request used against the model's window."""
    used = 0 if last is None else last.input_tokens + last.cache_read_tokens + last.output_tokens
    ps = chat.session.provider_settings
    window = context_window(ps, chat.session.model) if ps is not None else 0
    return f"{tokens(used)} / {tokens(window)} ctx" if window else f"{tokens(used)} ctx"


def welcome_text(chat: Chat) -> str:
    """The line a chat opens with: the model, the work folder, and how to get help."""
    work = chat.settings.work_dir
    home = Path.home()
    shown = f"~/{work.relative_to(home)}" if work.is_relative_to(home) and work != home else work
    return (
        f"openheim · {chat.provider}/{chat.session.model} · work folder {shown} · "
        "/help lists the commands · @ attaches a file · Ctrl+C cancels"
    )


def cost_text(chat: Chat) -> str:
    """The session's tokens and cost so far."""
    meter = chat.session.agent.meter
    usage = meter.usage
    cost = "unknown (no price for this model)" if meter.cost is None else f"${meter.cost:.4f}"
    return (
        f"tokens: {tokens(usage.input_tokens)} in, {tokens(usage.output_tokens)} out, "
        f"{tokens(usage.cache_read_tokens)} cached; cost: {cost}"
    )


async def memory_text(settings: Settings, query: str, limit: int = 20) -> str:
    """The latest memories, or those matching ``query``."""
    with open_memory(settings) as memory:
        if query:
            found = [hit.memory for hit in (await memory.search(query, limit)).hits]
        else:
            found = await memory.recent(limit)
    if not found:
        return f"no memories match {query!r}" if query else "no memories yet"
    return redact("\n".join(f"#{m.id} {m.text}" for m in found))


def sessions_of(settings: Settings, limit: int = 50) -> list[SessionRecord]:
    """The latest stored sessions that hold messages, newest first (a session open with
    nothing said yet has nothing to restore)."""
    store = open_store(settings.data_dir, settings.store_url)
    try:
        return [record for record in store.list(limit=limit) if record.message_count]
    finally:
        store.close()


def session_line(record: SessionRecord) -> str:
    """One line naming a stored session: id, when, model, size and title."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.updated_at))
    title = record.title or "(untitled)"
    model = f"{record.provider}/{record.model}"
    return f"{record.id[:8]}  {when}  {model}  {record.message_count} msgs  {title}"


def model_choices(settings: Settings) -> list[tuple[str, str]]:
    """Every configured provider/model pair, the configured default first."""
    pairs: list[tuple[str, str]] = []
    for name, entry in provider_entries(settings).items():
        if name not in settings.providers and name != settings.provider:
            continue
        pairs += [(name, model) for model in offered_models(entry)]
    pairs.sort(key=lambda pair: pair[0] != settings.provider)
    return pairs


def export_session(chat: Chat, target: str) -> Path:
    """Write the session as Markdown to ``target`` (default: ``openheim-ID.md`` in the work
    dir) and return where."""
    session_id = chat.session.id
    if session_id is None:
        raise ConfigError(
            "this session is not stored, so it cannot be exported",
            hint="turn save_sessions on in config.toml",
        )
    name = target or f"openheim-{session_id[:8]}.md"
    path = chat.settings.work_dir / Path(name).expanduser()
    store = open_store(chat.settings.data_dir, chat.settings.store_url)
    try:
        path.write_text(export_markdown(store, session_id), encoding="utf-8")
    finally:
        store.close()
    return path
