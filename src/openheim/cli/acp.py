"""``openheim acp``: an Agent Client Protocol agent on stdin/stdout, for editors."""

from __future__ import annotations

import argparse
import asyncio
import sys

from openheim.cli.settings import settings_from_flags
from openheim.events import notice_line
from openheim.term import exit_codes


def acp_command(args: argparse.Namespace) -> int:
    settings = settings_from_flags(args)
    sys.stderr.writelines(f"{notice_line(notice)}\n" for notice in settings.notices)
    from openheim.acp.stdio import serve_stdio
    from openheim.runtime import Runtime

    asyncio.run(serve_stdio(Runtime(settings=settings)))
    return exit_codes.OK
