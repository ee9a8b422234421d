"""Build the user's prompt from arguments, ``@path`` attachments and a piped stdin.

An attachment goes to the model as it is, so the deny-read patterns (``SecretPolicy``) apply
to it as to every file tool: ``@.env`` is refused, naming the pattern and the way round it.
Everything read from outside is bounded: an attachment is a regular file (a FIFO or a device
such as ``/dev/zero`` is refused before a byte is read) and stdin is read up to a limit, so
nothing can hang the command or fill its memory. Piped bytes that are not UTF-8 (``git diff``
of a Latin-1 file) become U+FFFD: the prompt is always text a provider can be sent.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from openheim.errors import ConfigError
from openheim.secrets import SecretPolicy

MAX_ATTACHMENT_BYTES = 1024 * 1024


def attach(raw: str, cwd: Path, policy: SecretPolicy | None = None) -> str:
    """The contents of ``@path`` wrapped so the model knows where they came from; a file the
    deny-read ``policy`` (default: the default patterns) names is refused."""
    text = read_attached(raw, cwd, policy)
    return f'<file path="{raw}">\n{text}{"" if text.endswith(chr(10)) else chr(10)}</file>'


def read_attached(raw: str, cwd: Path, policy: SecretPolicy | None = None) -> str:
    """The text of the file ``@raw`` names (``attach``, ``-s @FILE``): a regular text file of at
    most ``MAX_ATTACHMENT_BYTES`` that the deny-read ``policy`` does not name."""
    path = (cwd / raw).expanduser()
    _check_secret(raw, path, SecretPolicy.from_config() if policy is None else policy)
    try:
        data = read_regular(path, MAX_ATTACHMENT_BYTES, f"@{raw}", "attach a text file")
    except OSError as err:
        raise ConfigError(
            f"cannot attach @{raw}: {err.strerror or err}", hint="check the path after @"
        ) from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise ConfigError(
            f"@{raw} is over the {MAX_ATTACHMENT_BYTES} byte attachment limit",
            hint="attach a smaller file, or let the agent read it with its tools",
        )
    if b"\0" in data[:8192]:
        raise ConfigError(f"@{raw} is a binary file", hint="attach text files only")
    return data.decode("utf-8", "replace")


def read_regular(path: Path, limit: int, shown: str, hint: str) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (the caller refuses more); a
    FIFO, device or folder is a ConfigError naming ``shown``, with ``hint``, before a byte is
    read (opened non-blocking, so a FIFO cannot hang the open)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{shown} is not a regular file", hint=hint)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)


def read_stdin(stdin: TextIO, limit: int) -> bytes:
    """The bytes piped to ``stdin``, at most ``limit``: more is a ConfigError, read no further
    (stdin from ``/dev/zero`` never ends)."""
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        data: bytes = buffer.read(limit + 1)
    else:  # a text stream without bytes below it (a caller's StringIO)
        data = stdin.read(limit + 1).encode("utf-8", "surrogateescape")
    if len(data) > limit:
        raise ConfigError(
            f"stdin is over the {limit} byte limit",
            hint="pipe less, or save it to a file in the project and ask the agent to read it",
        )
    return data


def _check_secret(raw: str, path: Path, policy: SecretPolicy) -> None:
    """Refuse ``@raw`` when its name, real path or link target matches a deny-read pattern."""
    pattern = policy.match(path.resolve(), raw) or policy.match(path.absolute())
    if pattern is not None:
        raise ConfigError(
            f"refused to attach @{raw}: it matches the secret pattern {pattern!r} of deny_read, "
            "and secret files are not sent to the model",
            hint="paste only the part you need, or set deny_read in config.toml without that "
            "pattern (see docs/safety.md)",
        )


def build_prompt(
    words: Sequence[str],
    cwd: Path,
    stdin: TextIO | None = None,
    *,
    policy: SecretPolicy | None = None,
    required: bool = True,
) -> str:
    """Words joined by spaces, then attachments, then piped stdin, in that order; attachments
    are checked against the deny-read ``policy``. An empty prompt is an error if ``required``."""
    stdin = sys.stdin if stdin is None else stdin
    text = " ".join(w for w in words if not (w.startswith("@") and len(w) > 1))
    parts = [text] if text else []
    parts += [attach(w[1:], cwd, policy) for w in words if w.startswith("@") and len(w) > 1]
    if stdin is not None and not stdin.isatty():
        piped = read_stdin(stdin, MAX_ATTACHMENT_BYTES).decode("utf-8", "replace")
        if piped.strip():
            parts.append(piped.rstrip("\n"))
    prompt = "\n\n".join(parts)
    if required and not prompt.strip():
        raise ConfigError(
            "no prompt given", hint='pass one: openheim run "what does this project do?"'
        )
    return prompt
