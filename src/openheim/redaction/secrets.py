"""Secrets: keep them from the model's sight and out of every place text is written.

Two halves, both testable on their own:

* ``SecretPolicy``, deny-read globs. Every file tool resolves its paths through
  ``ToolContext.path``, which refuses a file that matches (a folder's names may still be
  listed); ``search`` skips such files and counts them. A pattern is matched, case-insensitively,
  against the resolved absolute path, the path relative to the work dir and the file name; ``~``
  is expanded and the fixed part of an absolute pattern has its symlinks resolved, because the
  sandbox hands out real paths. The defaults are ``DEFAULT_DENY_READ`` plus the user's own
  ``config.toml``; config key ``deny_read`` replaces them. ``@file`` attachments are checked
  too, and the shell's OS sandbox hides the files absolute patterns name (``fixed_paths``).
* ``Redactor``, known secret values (every API key config resolution hands out, and the secret
  values of the work dir's ``.env`` files, through ``register_secret``) and common key formats
  (``KEY_FORMATS``), replaced by ``[REDACTED]``. ``REDACTOR`` is the process-wide instance; it
  is applied wherever text leaves the process or reaches the model: tool results (the loop),
  the session store, exports, CLI output and logs. Streamed text goes through a
  ``secrets_stream.StreamRedactor``, which catches a secret split across deltas.

Known limits: the shell can still print a denied file, and then only registered values and
key formats are redacted (a password under an innocent name, or encoded, shows); a private key
read in windows that cut off its ``BEGIN`` line is not recognised. A hard link's other names
are not known, so the file tools refuse every file with more than one name (``fs.py``).
This module imports only the standard library, ``errors`` and ``messages``, so the core can use it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from openheim.errors import SandboxError
from openheim.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

_Block = TypeVar("_Block", TextBlock, ToolResultBlock, ToolUseBlock)

_MAGIC = re.compile(r"[*?[]")

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8
"""Shorter registered values are ignored: they would hit ordinary words."""


@dataclasses.dataclass(frozen=True, slots=True)
class KeyFormat:
    """A well-known secret shape. Every match begins with one of ``triggers`` (lower case;
    a header may have ``proxy-`` before its trigger), so the regex only runs on text holding
    one: a regex that starts with a literal is searched fast, an alternation of them is not,
    which is why formats run one by one.

    For streams (``StreamRedactor``): ``window`` characters from a trigger always decide
    whether a match starts there, and so does any of ``stops`` after the trigger (characters
    that cannot occur before the secret part ends)."""

    name: str
    pattern: str
    triggers: tuple[str, ...]
    window: int = 64
    stops: str = " \t\r\n"


KEY_FORMATS: tuple[KeyFormat, ...] = (
    KeyFormat("openai-anthropic", r"sk-(?<![\w-]sk-)[A-Za-z0-9_-]{20,}", ("sk-",), 24),
    KeyFormat("google", r"AIza(?<![\w-]AIza)[0-9A-Za-z_-]{35}", ("aiza",), 40),
    KeyFormat(
        "github",
        r"gh[pousr]_(?<![\w-]gh[pousr]_)[A-Za-z0-9]{36,}"
        r"|github_pat_(?<![\w-]github_pat_)[A-Za-z0-9_]{22,}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        41,
    ),
    KeyFormat(
        "aws",
        r"A[KS]IA(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        ("akia", "asia"),
        21,
    ),
    KeyFormat("slack", r"xox[abpr]-(?<![\w-]xox[abpr]-)[A-Za-z0-9-]{10,}", ("xox",), 16),
    KeyFormat(
        "bearer",
        r"(?P<keep>(?i:\b(?:proxy-)?authorization)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?i:bearer|basic|token)[ \t]+)[A-Za-z0-9._~+/-]{8,}=*",
        ("authorization",),
        stops="\r\n",
    ),
    KeyFormat(
        "url-password",
        r"(?P<keep>://[^/\s:@'\"]+:)[^/\s@'\"]+(?=@)",
        ("://",),
        256,
        " \t\r\n/@'\"",
    ),
    KeyFormat(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        ("-----begin",),
        stops="\r\n",
    ),
)
"""Header and URL matches keep their prefix (the header name, ``scheme://user:``) so the text
still reads; a private key block without its end line (cut output) is redacted to the end."""


class Hit(NamedTuple):
    """One secret found in a text: the match from ``start``, the secret part from ``secret``
    (after a kept prefix) to ``end``."""

    start: int
    secret: int
    end: int


class Redactor:
    """Known secret values and key formats, replaced by ``[REDACTED]``.

    The known values form one alternation of escaped literals; each format is one more pass,
    skipped unless the text holds one of its triggers. Ordinary text costs a lower-casing and
    a few substring scans (a few ms per MB).
    """

    def __init__(self, formats: Iterable[KeyFormat] = KEY_FORMATS) -> None:
        self.formats = tuple(formats)
        self._regexes = [(f.triggers, re.compile(f.pattern)) for f in self.formats]
        self._values: set[str] = set()
        self._lock = threading.Lock()
        self._known: re.Pattern[str] | None = None

    def add(self, value: str) -> None:
        """Treat ``value`` as a secret from now on (ignored when shorter than 8 characters)."""
        if len(value.strip()) < MIN_SECRET_LENGTH:
            return
        with self._lock:
            if value not in self._values:
                self._values.add(value)
                literals = sorted(self._values, key=len, reverse=True)
                self._known = re.compile("|".join(map(re.escape, literals)))

    @property
    def values(self) -> frozenset[str]:
        """The registered secret values."""
        with self._lock:
            return frozenset(self._values)

    def _passes(self, text: str) -> Iterator[re.Pattern[str]]:
        """The regexes that may match ``text``: known values, then triggered formats."""
        if self._known is not None:
            yield self._known
        lowered = text.lower()
        for triggers, regex in self._regexes:
            if any(t in lowered for t in triggers):
                yield regex

    def hits(self, text: str) -> list[Hit]:
        """Every match of a known value or format in ``text``, by start."""
        found = []
        for regex in self._passes(text):
            for match in regex.finditer(text):
                keep = match.groupdict().get("keep")
                secret = match.start() + len(keep) if keep else match.start()
                found.append(Hit(match.start(), secret, match.end()))
        return sorted(found)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        return replace_hits(text, self.hits(text), 0, len(text))

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds a known secret value or a key format."""
        return any(regex.search(text) for regex in self._passes(text))

    def redact_data(self, value: Any) -> Any:
        """A JSON-like value with every string in it redacted (mapping keys are kept)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self.redact_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_data(v) for v in value]
        return value

    def redact_message(self, message: Message) -> Message:
        """``message`` with its text, thinking, tool arguments and results redacted.

        Returns ``message`` itself when nothing changed. A thinking block whose text changed
        loses its signature: the provider would reject the altered text with it.
        """
        blocks = tuple(self._block(b) for b in message.content)
        if all(new is old for new, old in zip(blocks, message.content, strict=True)):
            return message
        return Message(message.role, blocks)

    def _block(self, block: ContentBlock) -> ContentBlock:
        if isinstance(block, TextBlock):
            return _replaced(block, text=self.redact(block.text))
        if isinstance(block, ThinkingBlock):
            thinking = self.redact(block.thinking)
            if thinking == block.thinking:
                return block
            return dataclasses.replace(block, thinking=thinking, signature=None)
        if isinstance(block, ToolResultBlock):
            return _replaced(block, content=self.redact(block.content))
        if isinstance(block, ToolUseBlock):
            return _replaced(
                block,
                arguments=self.redact_data(dict(block.arguments)),
                raw_arguments=self._optional(block.raw_arguments),
                error=self._optional(block.error),
            )
        return block

    def _optional(self, text: str | None) -> str | None:
        return None if text is None else self.redact(text)


def replace_hits(text: str, hits: Iterable[Hit], begin: int, end: int) -> str:
    """``text[begin:end]`` with the secret part of every hit in it replaced by
    ``[REDACTED]`` (overlapping secrets become one)."""
    out: list[str] = []
    done = begin
    for hit in sorted(hits, key=lambda h: h.secret):
        start, stop = max(hit.secret, begin), min(hit.end, end)
        if start >= end:
            break
        if stop <= done:
            continue
        if start >= done:
            out += [text[done:start], REDACTED]
        done = stop
    out.append(text[done:end])
    return "".join(out)


def _replaced(block: _Block, **changes: Any) -> _Block:
    """``block`` with ``changes`` applied, or ``block`` itself when they change nothing."""
    if all(getattr(block, k) == v for k, v in changes.items()):
        return block
    return dataclasses.replace(block, **changes)


REDACTOR = Redactor()
"""The process-wide redactor every sink uses."""


def register_secret(value: str) -> None:
    """Never let ``value`` reach the model, a log line, the session store or any output."""
    REDACTOR.add(value)


def redact(text: str) -> str:
    """``text`` with every secret ``REDACTOR`` knows replaced by ``[REDACTED]``."""
    return REDACTOR.redact(text)


def redact_data(value: Any) -> Any:
    """A JSON-like value with every string in it redacted by ``REDACTOR``."""
    return REDACTOR.redact_data(value)


def redact_message(message: Message) -> Message:
    """``message`` redacted by ``REDACTOR`` (see ``Redactor.redact_message``)."""
    return REDACTOR.redact_message(message)


DEFAULT_DENY_READ: tuple[str, ...] = (
    ".env*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "~/.ssh/**",
    "~/.aws/credentials",
)
"""Files no tool reads by default; the user's ``config.toml`` is added by ``from_config``."""


class SecretPolicy:
    """Deny-read globs: files whose contents no tool may read or write (see module docstring)."""

    def __init__(self, deny_read: Iterable[str] = ()) -> None:
        self.deny_read = tuple(deny_read)
        self._regexes = [re.compile(fnmatch.translate(_anchor(p).lower())) for p in self.deny_read]
        self._any = re.compile("|".join(r.pattern for r in self._regexes) or r"(?!)")

    @classmethod
    def from_config(
        cls, deny_read: Sequence[str] | None = None, *, home: Path | None = None
    ) -> SecretPolicy:
        """The policy of config key ``deny_read``: None keeps the defaults (``DEFAULT_DENY_READ``
        and ``home/config.toml``), a list replaces them (``[]`` denies nothing)."""
        if deny_read is not None:
            return cls(deny_read)
        config = _openheim_home() if home is None else home
        return cls((*DEFAULT_DENY_READ, glob.escape(str(config / "config.toml"))))

    def match(self, path: Path, shown: str | None = None) -> str | None:
        """The first pattern matching ``path`` (absolute), its name or ``shown``, else None."""
        names = [str(path).lower(), path.name.lower()]
        if shown:
            names.append(shown.lower())
        if not any(self._any.match(n) for n in names):
            return None
        return next(
            p
            for p, r in zip(self.deny_read, self._regexes, strict=True)
            if any(map(r.match, names))
        )

    @property
    def resolved(self) -> tuple[str, ...]:
        """The patterns as they match: ``~`` expanded, absolute folders resolved (two policies
        with equal ``deny_read`` and ``resolved`` decide every path alike)."""
        return tuple(r.pattern for r in self._regexes)

    def fixed_paths(self) -> tuple[Path, ...]:
        """The files and folders absolute patterns name outright (``~/.aws/credentials``,
        ``~/.ssh/**``): the shell's OS sandbox hides them."""
        out = []
        for pattern in self.deny_read:
            parts = Path(_anchor(pattern)).parts
            if parts and parts[-1] in ("*", "**"):
                parts = parts[:-1]
            if len(parts) > 1 and Path(*parts).is_absolute() and not _MAGIC.search("".join(parts)):
                out.append(Path(*parts))
        return tuple(out)

    def check(self, path: Path, shown: str) -> None:
        """Raise SandboxError when ``path`` is a file (or missing) matching a pattern."""
        pattern = self.match(path, shown)
        if pattern is not None and not path.is_dir():
            raise SandboxError(
                f"refused: {shown} matches the secret pattern {pattern!r}; "
                "secrets are not shown to the model",
                hint="work without this file and do not try to read it another way; "
                "ask the user if you need something from it",
            )


def _openheim_home() -> Path:
    raw = os.environ.get("OPENHEIM_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".openheim"


def _anchor(pattern: str) -> str:
    """``pattern`` with ``~`` expanded and the glob-free folders of an absolute pattern resolved
    to their real path (escaped), so it matches the real paths the sandbox hands out."""
    try:
        path = Path(pattern).expanduser()
    except RuntimeError:  # ~name of an unknown user: nothing can match it as a path
        return pattern
    if not path.is_absolute():
        return pattern
    parts = path.parts
    fixed = next((i for i, p in enumerate(parts) if _MAGIC.search(p)), len(parts))
    real = Path(*parts[:fixed]).resolve()
    return str(Path(glob.escape(str(real)), *parts[fixed:]))
