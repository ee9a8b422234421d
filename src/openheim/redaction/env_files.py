"""Secrets kept in the work dir's ``.env`` files, registered so every sink redacts them.

A password has no recognisable format, so a shell command that prints ``.env`` (the file tools
refuse it) would show it. When a session opens, the values of the variables with a
secret-looking name (``is_secret_name``: ``*_PASSWORD``, ``*_SECRET``, ``*_TOKEN``, ``*_KEY``,
``*_API_KEY``, ...) in the ``.env*`` files at the top of the work dir are registered as secrets.
Values shorter than ``MIN_SECRET_LENGTH`` are not: ``X_TOKEN=1`` must not hide every "1".

At most ``MAX_ENV_FILES`` files and ``MAX_ENV_SECRETS`` values count, so a hostile project cannot
make opening a session or redacting slow. Not covered: files in subfolders, files written or
changed after the session opened, secrets under innocent names (``DATABASE_URL`` holds its
password in URL form, which the key formats catch), and other files.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from openheim.process.child_env import is_secret_name
from openheim.redaction.secrets import MIN_SECRET_LENGTH, REDACTOR, Redactor

ENV_FILES = ".env*"
MAX_ENV_FILE_BYTES = 256 * 1024
"""Larger files are not env files; they are skipped."""
MAX_ENV_FILES = 32
"""``.env*`` files read at most (in name order): a project cannot make opening a session slow."""
MAX_ENV_SECRETS = 256
"""Values registered at most: each one is a little more work for every redaction."""

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")


def secret_values(text: str) -> list[str]:
    """The values, long enough to be secrets, of the secret-looking variables assigned in
    ``text`` (dotenv syntax: ``NAME=value``, ``export NAME="value"``, ``NAME='v' # note``)."""
    values = []
    for line in text.splitlines():
        found = _ASSIGNMENT.match(line)
        if found is None or not is_secret_name(found.group(1)):
            continue
        value = _unquote(found.group(2))
        if len(value.strip()) >= MIN_SECRET_LENGTH:
            values.append(value)
    return values


def _unquote(raw: str) -> str:
    """A dotenv value without its quotes, or without a trailing `` # comment``."""
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        return raw[1:end] if end > 0 else raw[1:]
    return raw.split(" #", 1)[0].strip()


def register_env_files(folder: Path, redactor: Redactor = REDACTOR) -> int:
    """Register the secret values of ``folder``'s ``.env*`` files; how many there were."""
    values: list[str] = []
    for path in sorted(folder.glob(ENV_FILES))[:MAX_ENV_FILES]:
        values += secret_values(_read_small_file(path) or "")
    for value in values[:MAX_ENV_SECRETS]:
        redactor.add(value)
    return min(len(values), MAX_ENV_SECRETS)


def _read_small_file(path: Path) -> str | None:
    """The text of a regular file of at most ``MAX_ENV_FILE_BYTES``, else None (never blocks
    on a FIFO or a device put in its place)."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENV_FILE_BYTES:
                return None
            return file.read(MAX_ENV_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
