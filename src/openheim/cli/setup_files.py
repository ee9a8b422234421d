"""The config files ``openheim setup`` edits: where each client keeps its MCP servers, and how
our one entry goes in or out while every other byte of the file stays.

Claude Code: ``~/.claude.json`` (JSON, ``mcpServers.openheim``). Codex: ``~/.codex/config.toml``
(``[mcp_servers.openheim]`` with our tools pre-approved, edited with ``tomlkit`` so comments
stay). OpenCode:
``~/.config/opencode/opencode.json`` or ``.jsonc`` (JSONC, ``mcp.openheim``, type ``local``).

A file is read only when it is a regular, writable file of this user (no symlink, no one else's
file) and parses; anything else is refused with the reason, and the file is left as it was.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openheim.errors import ConfigError
from openheim.files.hostile import read_regular
from openheim.formats import jsonedit

ENTRY = "openheim"
"""The name of our entry in every client's list of MCP servers."""
MAX_FILE_BYTES = 16 << 20
"""The largest file read: every client's config is far smaller; a larger one is refused."""
_SKIP = "fix or move the file (it was left as it was), or skip it with --only"


class Refused(ConfigError):
    """A file ``setup`` will not edit: it is a symlink, someone else's, or does not parse."""

    usage_error = False


Edit = Callable[[str, dict[str, Any] | None], str]
"""The new text from the old one: our entry set to a value, or removed (None)."""


@dataclass(frozen=True)
class Client:
    """One client: its file under the home folder and how our entry reads and is edited there."""

    name: str
    where: Callable[[Path], Path]
    entry: Callable[[Sequence[str], dict[str, str]], dict[str, Any]]
    edit: Edit


def claude_entry(command: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    return {"type": "stdio", "command": command[0], "args": list(command[1:]), "env": env}


def codex_entry(command: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Our tools pre-approved (``default_tools_approval_mode``): Codex asks before each MCP
    tool call, and ``codex exec`` (approval policy ``never``) fails every call it would ask
    about, so without it no openheim tool could run there."""
    entry: dict[str, Any] = {
        "command": command[0],
        "args": list(command[1:]),
        "default_tools_approval_mode": "approve",
    }
    return {**entry, "env": env} if env else entry


def opencode_entry(command: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "local", "command": list(command), "enabled": True}
    return {**entry, "environment": env} if env else entry


_BOM = "\ufeff"


def _keeping_format(edit: Edit) -> Edit:
    """``edit`` on the text without its byte order mark and with LF line endings; the result
    gets both back as the file had them (a file all in CRLF stays all in CRLF)."""

    def kept(text: str, entry: dict[str, Any] | None) -> str:
        bom = _BOM if text.startswith(_BOM) else ""
        body = text[len(bom) :]
        crlf = "\r\n" in body and "\n" not in body.replace("\r\n", "")
        body = body.replace("\r\n", "\n") if crlf else body
        new = edit(body, entry)
        if new == body:
            return text
        return bom + (new.replace("\n", "\r\n") if crlf else new)

    return kept


def _json_edit(outer: str, *, jsonc: bool) -> Edit:
    def edit(text: str, entry: dict[str, Any] | None) -> str:
        return _edit_json(text if text.strip() else "{}\n", outer, entry, jsonc)

    return _keeping_format(edit)


def _edit_json(text: str, outer: str, entry: dict[str, Any] | None, jsonc: bool) -> str:
    """``text`` with our entry under ``outer`` set to ``entry``, or removed (None)."""
    path = (outer, ENTRY)
    if entry is None:
        return jsonedit.drop_member(text, path, jsonc=jsonc)
    if jsonedit.get_member(text, path, jsonc=jsonc) == entry:
        return text
    return jsonedit.set_member(text, path, entry, jsonc=jsonc)


def _toml_edit(text: str, entry: dict[str, Any] | None) -> str:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import InlineTable, Table

    try:
        document = tomlkit.parse(text)
    except TOMLKitError as err:
        raise ValueError(f"invalid TOML: {err}") from None
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, Table | InlineTable):
        raise ValueError("mcp_servers is not a table")
    if entry is None:
        if servers is None or ENTRY not in servers:
            return text
        del servers[ENTRY]
        left = document.as_string()
        return left.rstrip("\n") + "\n" if left.endswith("\n\n") else left
    if servers is not None and servers.get(ENTRY) is not None:
        if servers[ENTRY].unwrap() == entry:
            return text
        del servers[ENTRY]
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document.add("mcp_servers", servers)
    table = tomlkit.table()
    for key, value in entry.items():
        table.add(key, value)
    servers.add(ENTRY, table)
    return document.as_string()


def _opencode_file(home: Path) -> Path:
    """OpenCode's global config: ``opencode.json``, else an existing ``opencode.jsonc``."""
    folder = home / ".config" / "opencode"
    jsonc = folder / "opencode.jsonc"
    plain = folder / "opencode.json"
    return jsonc if jsonc.exists() and not plain.exists() else plain


CLIENTS: dict[str, Client] = {
    "claude": Client(
        "claude",
        lambda home: home / ".claude.json",
        claude_entry,
        _json_edit("mcpServers", jsonc=False),
    ),
    "codex": Client(
        "codex",
        lambda home: home / ".codex" / "config.toml",
        codex_entry,
        _keeping_format(_toml_edit),
    ),
    "opencode": Client("opencode", _opencode_file, opencode_entry, _json_edit("mcp", jsonc=True)),
}


def read_owned(path: Path) -> str | None:
    """The file's text, or None when there is no file. Refused before a byte is read: a
    symlink, anything but a regular file (a FIFO would block, a folder or a device is no
    config), a file of another user, a read-only file (its owner chose so), one over
    ``MAX_FILE_BYTES``; after: text that is not UTF-8."""
    try:
        data = read_regular(path, MAX_FILE_BYTES, follow_symlinks=False, check=_owned(path))
    except FileNotFoundError:
        return None
    except ValueError as err:
        raise Refused(f"{path}: {err}", hint=_SKIP) from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise Refused(
                f"{path} is a symlink", hint="edit the file it points to by hand"
            ) from None
        raise Refused(f"{path} cannot be read: {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Refused(f"{path} is not UTF-8 text (byte {err.start})") from None


def _owned(path: Path) -> Callable[[os.stat_result], None]:
    """The check of ``path`` before it is read: a file of another user, or one its owner made
    read-only, is refused."""

    def check(info: os.stat_result) -> None:
        if info.st_uid != os.getuid():
            raise Refused(
                f"{path} belongs to another user (uid {info.st_uid})",
                hint="run setup as the file's owner",
            )
        if not info.st_mode & stat.S_IWUSR:
            raise Refused(
                f"{path} is read-only",
                hint="make it writable (chmod u+w), or skip it with --only",
            )

    return check


def new_text(client: Client, path: Path, old: str, entry: dict[str, Any] | None) -> str:
    """The file's text with our entry set (or removed); a file that does not parse, or whose
    shape is not the client's, is refused naming the file and the line."""
    try:
        return client.edit(old, entry)
    except ValueError as err:
        raise Refused(
            f"{path}: {err}", hint="fix the file (it was left as it was), or skip it with --only"
        ) from None
