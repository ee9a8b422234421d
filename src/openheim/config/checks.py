"""Checks of config values that the schema's types cannot express: folders, host:port entries,
and the values of environment variables and flags. Each failure is a ConfigError saying what to
change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openheim.config.schema import (
    APPROVAL_MODES,
    HOOK_ALIASES,
    HOOK_EVENTS,
    MAX_ITERATIONS_LIMIT,
    ConfigFile,
    HookEntry,
)
from openheim.errors import ConfigError


def resolved(raw: object, base: Path, what: str) -> Path:
    """``raw`` (``~`` expanded) made absolute against ``base`` with links resolved; a
    ConfigError when it cannot be a path at all (a NUL character, a name too long)."""
    try:
        return (base / Path(str(raw)).expanduser()).resolve()
    except (OSError, ValueError) as err:
        raise _unusable(f"{what} {raw!r}", err) from None


def is_folder(path: Path, what: str) -> bool:
    """Whether ``path`` is a folder; a ConfigError when the system cannot even check it."""
    try:
        return path.is_dir()
    except (OSError, ValueError) as err:
        raise _unusable(f"{what} {path}", err) from None


def _unusable(what: str, err: OSError | ValueError) -> ConfigError:
    if isinstance(err, ValueError) and "null" in str(err):
        reason = "it contains a NUL character"  # said alike by every Python version
    else:
        reason = (err.strerror if isinstance(err, OSError) else None) or str(err)
    return ConfigError(f"{what} is not a usable path: {reason}", hint="fix the path")


def check_folder(path: Path, what: str) -> Path:
    """``path`` when it is a folder or can become one: the nearest part of it that exists must be
    a folder (``OPENHEIM_HOME=/dev/null`` is refused here, not by a traceback later)."""
    for part in (path, *path.parents):
        if is_folder(part, what):
            return path
        if part.exists() or part.is_symlink():
            inside = "" if part == path else f" ({part} is not a directory)"
            raise ConfigError(
                f"{what} {path} is not a folder{inside}",
                hint=f"point {what} at a folder; it is created when missing",
            )
    return path


def check_config(path: Path, config: ConfigFile) -> None:
    """Values of one parsed file that types alone do not rule out."""
    for entry in config.web_fetch_allow:
        problem = host_port_problem(entry)
        if problem is not None:
            raise ConfigError(
                f"{path}: web_fetch_allow entry {entry!r} {problem}",
                hint="write host, host:port or [IPv6]:port, with a port from 1 to 65535",
            )


def hook_events(path: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with the keys of its ``[hooks]`` table as event names (Yips' aliases mapped);
    a ConfigError for a name that is no event, an event named twice, or ``required`` on a hook
    other than ``pre_tool``."""
    table = raw.get("hooks")
    if not table:
        return raw
    events: dict[str, Any] = {}
    for name, entry in table.items():
        event = HOOK_ALIASES.get(name, name)
        if event not in HOOK_EVENTS:
            raise ConfigError(
                f"{path}: [hooks] has no event {name!r}",
                hint=f"use one of: {', '.join([*HOOK_EVENTS, *HOOK_ALIASES])}",
            )
        if event in events:
            raise ConfigError(
                f"{path}: [hooks] names the event {event!r} twice", hint="keep one of them"
            )
        if event != "pre_tool" and isinstance(entry, dict) and entry.get("required"):
            raise ConfigError(
                f"{path}: [hooks] {name}: only a pre_tool hook can be required",
                hint="remove required = true",
            )
        events[event] = entry
    return {**raw, "hooks": events}


def hook_entries(table: dict[str, str | HookEntry]) -> dict[str, HookEntry]:
    """Every configured hook as a ``HookEntry`` (a bare string is its command)."""
    return {
        event: HookEntry(entry) if isinstance(entry, str) else entry
        for event, entry in table.items()
    }


def host_port_problem(entry: str) -> str | None:
    """Why ``entry`` is not ``host``, ``host:port``, ``[v6]:port`` or a bare IPv6 address."""
    text = entry.strip()
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return "has an unclosed or misplaced ']'"
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
        if not port:
            return "has an empty port"
    else:
        host, port = text, ""
    if not host.rstrip(".") or any(c.isspace() or c in "/@?#" for c in host):
        return "has no valid host name"
    if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65_535):
        return f"has an invalid port {port!r}"
    return None


def check_approval(mode: str, source: str) -> str:
    """``mode`` when it is an approval mode; ``source`` names where it came from."""
    if mode not in APPROVAL_MODES:
        raise ConfigError(
            f"{source} must be one of {', '.join(APPROVAL_MODES)}, got {mode!r}",
            hint=f"set {source} to one of these modes (the default is ask)",
        )
    return mode


def check_max_iterations(value: int, source: str) -> int:
    """``value`` when it is a usable iteration limit."""
    if not 1 <= value <= MAX_ITERATIONS_LIMIT:
        raise ConfigError(
            f"{source} must be at least 1 and at most {MAX_ITERATIONS_LIMIT}, got {value}",
            hint="use a number such as 20",
        )
    return value
