"""Build the user's prompt from arguments, ``@path`` attachments and a piped stdin."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from openheim.errors import ConfigError

MAX_ATTACHMENT_BYTES = 1024 * 1024


def attach(raw: str, cwd: Path) -> str:
    """The contents of ``@path`` wrapped so the model knows where they came from."""
    path = (cwd / raw).expanduser()
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(
            f"cannot attach @{raw}: {err.strerror or err}", hint="check the path after @"
        ) from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise ConfigError(
            f"@{raw} is {len(data)} bytes, over the {MAX_ATTACHMENT_BYTES} byte attachment limit",
            hint="attach a smaller file, or let the agent read it with its tools",
        )
    if b"\0" in data[:8192]:
        raise ConfigError(f"@{raw} is a binary file", hint="attach text files only")
    text = data.decode("utf-8", "replace")
    return f'<file path="{raw}">\n{text}{"" if text.endswith(chr(10)) else chr(10)}</file>'


def build_prompt(words: Sequence[str], cwd: Path, stdin: TextIO | None = None) -> str:
    """Words joined by spaces, then attachments, then piped stdin, in that order."""
    stdin = sys.stdin if stdin is None else stdin
    text = " ".join(w for w in words if not (w.startswith("@") and len(w) > 1))
    parts = [text] if text else []
    parts += [attach(w[1:], cwd) for w in words if w.startswith("@") and len(w) > 1]
    if stdin is not None and not stdin.isatty():
        piped = stdin.read()
        if piped.strip():
            parts.append(piped.rstrip("\n"))
    prompt = "\n\n".join(parts)
    if not prompt.strip():
        raise ConfigError(
            "no prompt given", hint='pass one: openheim run "what does this project do?"'
        )
    return prompt
