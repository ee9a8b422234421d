"""Entry point of the ``openheim`` command."""

from __future__ import annotations

import sys

from openheim._version import __version__


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--version"]:
        print(f"openheim {__version__}")
        return 0
    return 2
