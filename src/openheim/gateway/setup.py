"""The gateway's configuration turned into its parts: secrets read from the environment or a
file (``env:NAME`` / ``file:PATH``; a secret written into config.toml itself is refused), the
settings its sessions run with, the allow-lists, and one client per platform asked for."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from openheim.config.load import Settings
from openheim.config.schema import GatewayEntry
from openheim.errors import ConfigError
from openheim.formats.urls import is_loopback
from openheim.gateway.inbound import Platform
from openheim.gateway.state import GatewayState
from openheim.redaction.secrets import register_secret

PLATFORMS = ("telegram", "discord", "whatsapp")
DEFAULT_RATE_LIMIT = 20
DEFAULT_RATE_WINDOW = 60.0
DEFAULT_QUEUE = 3
DEFAULT_SECRETS = {
    "telegram.token": "TELEGRAM_BOT_TOKEN",
    "telegram.webhook_secret": "TELEGRAM_WEBHOOK_SECRET",
    "discord.token": "DISCORD_BOT_TOKEN",
    "whatsapp.token": "WHATSAPP_TOKEN",
    "whatsapp.app_secret": "WHATSAPP_APP_SECRET",
    "whatsapp.verify_token": "WHATSAPP_VERIFY_TOKEN",
}
"""The environment variable each secret is read from when its key is not set."""


def read_secret(ref: str | None, key: str, env: Mapping[str, str], *, required: bool) -> str:
    """The secret ``gateway.KEY`` names (``env:NAME`` or ``file:PATH``), registered so that no
    log or output shows it; empty when it is not required and not set."""
    where = f"gateway.{key}"
    ref = ref or (f"env:{DEFAULT_SECRETS[key]}" if key in DEFAULT_SECRETS else None)
    value = ""
    if ref is None:
        pass
    elif ref.startswith("env:"):
        value = env.get(ref[4:], "").strip()
    elif ref.startswith("file:"):
        value = _read_file(Path(ref[5:]).expanduser(), where)
    else:
        raise ConfigError(
            f"{where} must be env:NAME or file:PATH, never the secret itself",
            hint=f'e.g. {key.rpartition(".")[2]} = "env:{DEFAULT_SECRETS.get(key, "NAME")}"',
        )
    if required and not value:
        raise ConfigError(
            f"{where} is not set: {ref or 'no env:NAME or file:PATH given'} is empty",
            hint="export the variable or write the file (see docs/gateway.md)",
        )
    if value:
        register_secret(value)
    return value


def _read_file(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(
            f"{where}: cannot read {path} ({type(err).__name__})", hint="fix the path"
        ) from None


def base_url(raw: str | None, key: str, default: str) -> str:
    """``gateway.KEY`` (or ``default``): an https or wss URL, or http/ws to this machine only,
    since the platform's token travels with every request."""
    url = raw or default
    parts = urlsplit(url)
    secure = parts.scheme in ("https", "wss")
    local = parts.scheme in ("http", "ws") and is_loopback(url)
    if not parts.netloc or not (secure or local):
        raise ConfigError(
            f"gateway.{key} {url!r} is not an https:// (or wss://) URL",
            hint="plain http:// and ws:// are allowed only to 127.0.0.1 or localhost",
        )
    return url


def chosen_platforms(gateway: GatewayEntry, asked: Sequence[str]) -> list[str]:
    """The platforms to serve: those asked for (each must be configured), else every one
    configured; a ConfigError when that leaves none."""
    configured = [name for name in PLATFORMS if getattr(gateway, name) is not None]
    for name in asked:
        if name not in configured:
            raise ConfigError(
                f"--{name}: there is no [gateway.{name}] table in your config.toml",
                hint="add it (see docs/gateway.md)",
            )
    chosen = list(asked) or configured
    if not chosen:
        raise ConfigError(
            "no chat platform is configured",
            hint="add [gateway.telegram], [gateway.discord] or [gateway.whatsapp] to your "
            "config.toml (see docs/gateway.md)",
        )
    return chosen


def session_settings(settings: Settings) -> Settings:
    """The settings of the gateway's sessions: its own provider, model, work dir and approval
    mode (``ask`` by default: with no one to ask, such calls are refused)."""
    gateway = settings.gateway
    work_dir = settings.work_dir
    if gateway.work_dir:
        work_dir = Path(gateway.work_dir).expanduser().resolve()
        if not work_dir.is_dir():
            raise ConfigError(
                f"gateway.work_dir {gateway.work_dir!r} is not an existing directory",
                hint="create it or fix the path",
            )
    return dataclasses.replace(
        settings,
        provider=gateway.provider or settings.provider,
        model=gateway.model or settings.model,
        approval=gateway.approval or "ask",
        work_dir=work_dir,
    )


def allowed_users(gateway: GatewayEntry) -> dict[str, frozenset[str]]:
    """Each platform's allow-list of sender ids."""
    allowed: dict[str, frozenset[str]] = {}
    for name in PLATFORMS:
        entry = getattr(gateway, name)
        if entry is not None:
            allowed[name] = frozenset(str(user).strip() for user in entry.allowed_users)
    return allowed


def build_platform(
    name: str, settings: Settings, state: GatewayState, env: Mapping[str, str] | None = None
) -> Platform:
    """The client of platform ``name`` from its ``[gateway.NAME]`` table."""
    env = os.environ if env is None else env
    if name == "telegram":
        from openheim.gateway.telegram import API_BASE, Telegram

        telegram = settings.gateway.telegram
        assert telegram is not None
        token = read_secret(telegram.token, "telegram.token", env, required=True)
        secret = None
        if telegram.mode == "webhook":
            key = "telegram.webhook_secret"
            secret = read_secret(telegram.webhook_secret, key, env, required=True)
        api_base = base_url(telegram.api_base, "telegram.api_base", API_BASE)
        return Telegram(token, state, api_base=api_base, webhook_secret=secret)
    if name == "whatsapp":
        return _whatsapp(settings, env)
    if name == "discord":
        from openheim.gateway.discord import API_BASE as DISCORD_API
        from openheim.gateway.discord import Discord
        from openheim.gateway.discord_gateway import GATEWAY_URL

        discord = settings.gateway.discord
        assert discord is not None
        token = read_secret(discord.token, "discord.token", env, required=True)
        return Discord(
            token,
            api_base=base_url(discord.api_base, "discord.api_base", DISCORD_API),
            gateway_url=base_url(discord.gateway_url, "discord.gateway_url", GATEWAY_URL),
        )
    raise ConfigError(f"the {name} gateway is not available in this version")


def _whatsapp(settings: Settings, env: Mapping[str, str]) -> Platform:
    from openheim.gateway.whatsapp import API_BASE, WhatsApp

    whatsapp = settings.gateway.whatsapp
    assert whatsapp is not None
    if not whatsapp.phone_number_id:
        raise ConfigError(
            "gateway.whatsapp.phone_number_id is not set",
            hint="copy it from the WhatsApp API set-up page of your Meta app",
        )
    return WhatsApp(
        read_secret(whatsapp.token, "whatsapp.token", env, required=True),
        read_secret(whatsapp.app_secret, "whatsapp.app_secret", env, required=True),
        read_secret(whatsapp.verify_token, "whatsapp.verify_token", env, required=True),
        whatsapp.phone_number_id,
        api_base=base_url(whatsapp.api_base, "whatsapp.api_base", API_BASE),
    )
