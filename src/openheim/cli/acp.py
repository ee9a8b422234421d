"""``openheim acp``: an Agent Client Protocol agent on stdin/stdout, for editors."""

from __future__ import annotations

import argparse
import asyncio

from openheim.cli import exit_codes
from openheim.cli.settings import settings_from_flags


def acp_command(args: argparse.Namespace) -> int:
    settings = settings_from_flags(args)
    from openheim.acp.stdio import serve_stdio
    from openheim.api import Runtime

    asyncio.run(serve_stdio(Runtime(settings=settings)))
    return exit_codes.OK
