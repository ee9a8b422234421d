"""Trusted folders: projects whose own ``.openheim/config.toml`` may widen safety settings.

The list lives in the user's data dir (``trusted_folders.json``), never in a project, so a
project cannot trust itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write

TRUST_FILE = "trusted_folders.json"


def _trust_file(data_dir: Path) -> Path:
    return data_dir / TRUST_FILE


def trusted_folders(data_dir: Path) -> list[Path]:
    path = _trust_file(data_dir)
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"{path} is unreadable: {err}", hint="fix or delete it, then trust folders again"
        ) from None
    if not isinstance(data, list) or not all(isinstance(p, str) for p in data):
        raise ConfigError(f"{path} must be a JSON list of paths", hint="fix or delete it")
    return [Path(p) for p in data]


def is_trusted(folder: Path, data_dir: Path) -> bool:
    folder = folder.resolve()
    return any(folder == p or folder.is_relative_to(p) for p in trusted_folders(data_dir))


def set_trust(folder: Path, data_dir: Path, *, trusted: bool = True) -> bool:
    """Add (or remove) ``folder``; returns whether the list changed. Written atomically."""
    folder = folder.resolve()
    current = trusted_folders(data_dir)
    updated = sorted({*current, folder} if trusted else set(current) - {folder})
    if updated == sorted(current):
        return False
    data_dir.mkdir(parents=True, exist_ok=True)
    payload = json.dumps([str(p) for p in updated], indent=2) + "\n"
    atomic_write(_trust_file(data_dir), payload.encode())
    return True
