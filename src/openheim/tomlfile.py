"""Reading a TOML file into a typed record, with errors that name the file, the key and a fix."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from openheim.errors import ConfigError
from openheim.typed import TypeCheckError, from_mapping

T = TypeVar("T")


def read_toml(path: Path) -> dict[str, Any]:
    """The file's top-level table; a ConfigError for unreadable files, text that is not UTF-8,
    bad syntax and nesting too deep to parse."""
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(
            f"{path}: invalid TOML: {err}", hint="fix the syntax at that line"
        ) from None
    except UnicodeDecodeError as err:
        line = err.object[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {err.start + 1}, line {line})",
            hint="save the file as UTF-8 text; config files are TOML",
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{path}: nested too deeply to read", hint="use fewer nested arrays or tables"
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path} is a folder, not a file", hint="move the folder away or put a file there"
        ) from None
    except OSError as err:
        reason = err.strerror or str(err)
        raise ConfigError(f"cannot read {path}: {reason}", hint="check the file") from None


def typed_table(path: Path, raw: dict[str, Any], cls: type[T], hint: str) -> T:
    """``raw`` checked against ``cls``; a ConfigError naming the key and the nearest valid one
    (or ``hint`` when there is no near key)."""
    try:
        return from_mapping(cls, raw)
    except TypeCheckError as err:
        near = f"did you mean {err.suggestion!r}?" if err.suggestion else hint
        raise ConfigError(f"{path}: {err.path}: {err.problem}", hint=near) from None
