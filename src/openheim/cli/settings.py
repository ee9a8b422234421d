"""The settings of a command from its flags: config files, environment, then the flags."""

from __future__ import annotations

import argparse
import sys

from openheim.config.load import Overrides, Settings, load_settings


def settings_from_flags(args: argparse.Namespace) -> Settings:
    """Load the settings with the command's model, provider, shell, work dir and approval flags
    (and ``--max-iterations`` where the command has it); print the notices on stderr."""
    overrides = Overrides(
        provider=args.provider,
        model=args.model,
        max_iterations=getattr(args, "max_iterations", None),
        allow_shell=args.allow_shell,
        work_dir=args.work_dir,
        approval=args.approve,
    )
    settings = load_settings(overrides)
    for notice in settings.notices:
        sys.stderr.write(f"openheim: {notice}\n")
    return settings
