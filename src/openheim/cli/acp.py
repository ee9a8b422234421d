"""``openheim acp``: an Agent Client Protocol agent on stdin/stdout, for editors."""

from __future__ import annotations

import argparse
import asyncio
import sys

from openheim.cli import exit_codes
from openheim.config.load import Overrides, load_settings


def acp_command(args: argparse.Namespace) -> int:
    overrides = Overrides(
        provider=args.provider,
        model=args.model,
        allow_shell=args.allow_shell,
        work_dir=args.work_dir,
        approval=args.approve,
    )
    settings = load_settings(overrides)
    for notice in settings.notices:
        sys.stderr.write(f"openheim: {notice}\n")
    from openheim.acp.stdio import serve_stdio
    from openheim.api import Runtime

    asyncio.run(serve_stdio(Runtime(settings=settings)))
    return exit_codes.OK
