"""Logging set-up: level from ``OPENHEIM_LOG`` / ``--log-level``, secrets masked in every line.

Headless commands log to stderr; interactive surfaces log to ``data_dir/openheim.log`` so the
screen stays clean. Every line, whatever logger or library produced it (exception tracebacks
included), passes the process-wide redactor of ``openheim.redaction.secrets``: each API key config
resolution hands out (``register_secret``) and every common key format become ``[REDACTED]``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from openheim.redaction.secrets import redact
from openheim.redaction.secrets import register_secret as register_secret

_LEVELS = ("debug", "info", "warning", "error", "critical")
DEFAULT_LEVEL = "warning"


class RedactingFormatter(logging.Formatter):
    """A formatter whose every formatted record is redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def parse_level(raw: str | None) -> int:
    """A level name (case-insensitive) as a logging level; ValueError names the valid ones."""
    name = (raw or DEFAULT_LEVEL).strip().lower()
    if name not in _LEVELS:
        raise ValueError(f"unknown log level {raw!r}; use one of {', '.join(_LEVELS)}")
    return int(getattr(logging, name.upper()))


def setup_logging(level: str | None = None, *, log_file: Path | None = None) -> None:
    """Configure the ``openheim`` root handler once per process."""
    resolved = parse_level(level or os.environ.get("OPENHEIM_LOG"))
    detailed = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler()
        if resolved > logging.DEBUG:  # a terminal user wants one plain line, not a log record
            detailed = "openheim: %(levelname)s: %(message)s"  # e.g. openheim: WARNING: ...
    handler.setFormatter(RedactingFormatter(detailed))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(resolved)
