"""``openheim trust``: let a project's own config widen safety settings (or stop that)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openheim.config.load import load_settings
from openheim.config.trust import set_trust, trusted_folders
from openheim.errors import ConfigError
from openheim.term import exit_codes


def trust_command(args: argparse.Namespace) -> int:
    data_dir = load_settings().data_dir
    if args.list:
        for folder in trusted_folders(data_dir):
            sys.stdout.write(f"{folder}\n")
        return exit_codes.OK
    folder = Path(args.path).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a directory", hint="pass a project folder")
    changed = set_trust(folder, data_dir, trusted=not args.remove)
    verb = "no longer trusted" if args.remove else "trusted"
    note = "" if changed else " (unchanged)"
    sys.stdout.write(f"{folder}: {verb}{note}\n")
    return exit_codes.OK
