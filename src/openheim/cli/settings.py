"""The settings of a command from its flags: config files, environment, then the flags."""

from __future__ import annotations

import argparse

from openheim.config.load import Overrides, Settings, load_settings


def settings_from_flags(args: argparse.Namespace) -> Settings:
    """Load the settings with the command's model, provider, shell, work dir and approval flags
    (and ``--max-iterations`` where the command has it). Their notices are the command's to
    show: ``run`` gives them as events of its session."""
    overrides = Overrides(
        provider=args.provider,
        model=args.model,
        max_iterations=getattr(args, "max_iterations", None),
        allow_shell=args.allow_shell,
        work_dir=args.work_dir,
        approval=args.approve,
    )
    return load_settings(overrides)
