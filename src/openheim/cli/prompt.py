"""Build the user's prompt from arguments, ``@path`` attachments and a piped stdin.

Attachments are read by the runtime's one resolver (``runtime.attach.Attacher``), with the
checks of ``read_file``: inside the work dir, deny-read applies, a regular file with one name.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from openheim.errors import ConfigError
from openheim.runtime.attach import Attacher


def build_prompt(
    words: Sequence[str],
    attacher: Attacher,
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
        piped = stdin.read()
        if piped.strip():
            parts.append(piped.rstrip("\n"))
    prompt = "\n\n".join(parts)
    if required and not prompt.strip():
        raise ConfigError(
            "no prompt given", hint='pass one: openheim run "what does this project do?"'
        )
    return prompt
