"""Build the user's prompt from arguments, ``@path`` attachments and a piped stdin.

Attachments are read by the runtime's one resolver (``runtime.attach.Attacher``), with the
checks of ``read_file``: inside the work dir, deny-read applies, a regular file with one name.
stdin is read up to a limit (``/dev/zero`` never ends), and piped bytes that are not UTF-8
(``git diff`` of a Latin-1 file) become U+FFFD: the prompt is always text a provider can be sent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from openheim.errors import ConfigError
from openheim.runtime import attach


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


def build_prompt(
    words: Sequence[str],
    attacher: attach.Attacher,
    stdin: TextIO | None = None,
    *,
    required: bool = True,
) -> str:
    """Words joined by spaces, then the files of ``@path`` words, then piped stdin, in that
    order. An empty prompt is an error if ``required``."""
    stdin = sys.stdin if stdin is None else stdin
    text = " ".join(w for w in words if not (w.startswith("@") and len(w) > 1))
    parts = [text] if text else []
    parts += [attacher.attach(w[1:]) for w in words if w.startswith("@") and len(w) > 1]
    if stdin is not None and not stdin.isatty():
        piped = read_stdin(stdin, attach.MAX_ATTACHMENT_BYTES).decode("utf-8", "replace")
        if piped.strip():
            parts.append(piped.rstrip("\n"))
    prompt = "\n\n".join(parts)
    if required and not prompt.strip():
        raise ConfigError(
            "no prompt given", hint='pass one: openheim run "what does this project do?"'
        )
    return prompt
