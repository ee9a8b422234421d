"""Attachments: the files that ``@path`` words and ``-s @FILE`` send to the model.

One resolver for every surface (``run`` arguments and ``-s``, the chat REPL and terminal UI,
``/ws`` prompts), with the checks of ``read_file``: the path resolves through the tools'
sandbox (``..``, absolute paths and symlinks that lead out of the work dir are refused), the
deny-read patterns apply to its real path and to the name given, and the file is opened by
the file tools' rule (``open_regular``: a regular file with one name, reached with no symlink
on the way; a FIFO or a device is refused without blocking). A hard link is refused because
its other names may be a secret outside the work dir. The text is at most
``MAX_ATTACHMENT_BYTES`` and not binary. Every refusal is a ``ConfigError`` (a usage error:
the user typed the path).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from openheim.errors import ConfigError, SandboxError
from openheim.redaction.secrets import SecretPolicy
from openheim.tools.builtin.fs import BINARY_PROBE, looks_binary, not_plain, open_regular
from openheim.tools.sandbox import PathSandbox

MAX_ATTACHMENT_BYTES = 1024 * 1024
MENTION = re.compile(r"(?<!\S)@(\S+)")
"""``@path`` at the start of the text or after white space (``me@example.com`` is no mention)."""


def mentions(text: str) -> list[str]:
    """The paths the ``@path`` words of ``text`` name."""
    return MENTION.findall(text)


class Attacher:
    """Reads attachments for one work dir, deny-read policy and folder relative paths start
    from (``cwd``: the shell's folder for the CLI, the work dir for the other surfaces)."""

    def __init__(self, work_dir: Path, policy: SecretPolicy, cwd: Path | None = None) -> None:
        try:
            self.sandbox = PathSandbox(work_dir)
        except SandboxError as err:
            raise ConfigError(err.message, hint=err.hint) from None
        self.policy = policy
        self.cwd = Path(os.path.abspath(work_dir if cwd is None else cwd))

    def attach(self, raw: str) -> str:
        """The text of ``@raw`` wrapped so the model knows where it came from."""
        text = self.read(raw)
        return f'<file path="{raw}">\n{text}{"" if text.endswith(chr(10)) else chr(10)}</file>'

    def read(self, raw: str) -> str:
        """The text of the file ``@raw`` names (see the module docstring)."""
        path = self._resolve(raw)
        try:
            with open_regular(self.sandbox, path) as fh:
                data = fh.read(MAX_ATTACHMENT_BYTES + 1)
        except SandboxError as err:  # a folder on the way became a symlink
            raise _refused(raw, err.message) from None
        except OSError as err:
            why = not_plain(err)
            if why is None:  # nothing there, no permission, an I/O error
                raise ConfigError(
                    f"cannot attach @{raw}: {err.strerror or err}", hint="check the path after @"
                ) from None
            raise _refused(raw, f"it {why}") from None
        if len(data) > MAX_ATTACHMENT_BYTES:
            raise ConfigError(
                f"@{raw} is over the {MAX_ATTACHMENT_BYTES} byte attachment limit",
                hint="attach a smaller file, or let the agent read it with its tools",
            )
        if looks_binary(data[:BINARY_PROBE]):
            raise ConfigError(f"@{raw} is a binary file", hint="attach text files only")
        return data.decode("utf-8", "replace")

    def _resolve(self, raw: str) -> Path:
        """The real path of ``@raw`` inside the work dir, refused when deny-read names it (by
        its real path, or by the path as given: a link named like a secret)."""
        try:
            path = self.sandbox.resolve(raw, self.cwd)
        except SandboxError as err:
            raise _refused(raw, err.message, "attach a file inside the work dir") from None
        lexical = Path(os.path.normpath(self.cwd / raw))
        pattern = self.policy.match(path, self.sandbox.display(path)) or self.policy.match(
            lexical, raw
        )
        if pattern is not None:
            raise ConfigError(
                f"refused to attach @{raw}: it matches the secret pattern {pattern!r} of "
                "deny_read, and secret files are not sent to the model",
                hint="paste only the part you need, or set deny_read in config.toml without "
                "that pattern (see docs/safety.md)",
            )
        return path


def _refused(raw: str, why: str, hint: str = "attach a regular text file") -> ConfigError:
    return ConfigError(f"refused to attach @{raw}: {why}", hint=hint)
