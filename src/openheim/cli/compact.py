"""``openheim sessions compact ID``: a stored session's older turns summarised now."""

from __future__ import annotations

import asyncio
import sys

from openheim.config.load import load_settings
from openheim.events import compaction_line
from openheim.runtime import Runtime, SessionOptions
from openheim.term import exit_codes


def compact_command(session_id: str) -> int:
    """Compact the session (its latest turn kept) and say what happened on stdout."""
    return asyncio.run(_compact(session_id))


async def _compact(session_id: str) -> int:
    runtime = Runtime(settings=load_settings())
    async with runtime.open_session(SessionOptions(resume=session_id)) as session:
        done = await session.compact()
    if done is None:
        sys.stdout.write("nothing to compact: the session has no turn before its latest\n")
    else:
        sys.stdout.write(compaction_line(done) + "\n")
    return exit_codes.OK
