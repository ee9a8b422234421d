"""``openheim chat`` (and ``openheim`` with no command in a terminal): the interactive chat.

In a terminal it opens the Textual UI (``openheim.tui``, the ``tui`` extra); with ``--no-tui``,
or when stdin or stdout is not a terminal, the same chat runs as a plain line REPL. Textual is
imported only here, and only when the UI opens; the runtime only once its first frame is
drawn (the session's options are made then).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from typing import TYPE_CHECKING

from openheim.cli.settings import settings_from_flags
from openheim.errors import ConfigError

if TYPE_CHECKING:
    from openheim.config.load import Settings
    from openheim.runtime import SessionOptions

INSTALL_HINT = "install it with: pip install 'openheim[tui]' (or run with --no-tui)"


def chat_command(args: argparse.Namespace) -> int:
    settings = settings_from_flags(args)
    options = functools.partial(session_options, args)
    first = " ".join(args.prompt) or None
    if args.no_tui or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return asyncio.run(_repl(settings, options(), first, tool_output=args.tool_output))
    try:
        from openheim.tui.app import run_app
    except ImportError:
        raise ConfigError(
            "the terminal UI needs Textual, which is not installed", hint=INSTALL_HINT
        ) from None
    return run_app(settings, options, first)


def session_options(args: argparse.Namespace) -> SessionOptions:
    """The session the chat's flags ask for."""
    from openheim.runtime import SessionOptions

    skills = [s.strip() for s in (args.skills or "").split(",") if s.strip()]
    return SessionOptions(
        resume=args.session,
        continue_latest=args.continue_latest,
        skills=tuple(skills),
        provider=args.provider,
        model=args.model,
        agent=args.agent,
    )


async def _repl(
    settings: Settings, options: SessionOptions, first: str | None, *, tool_output: bool
) -> int:
    """The plain REPL; with no controlling terminal to ask on, calls needing approval are
    refused (``runtime.headless``), and each answer after one ends with how to let it run."""
    from openheim.chat.history import history_for
    from openheim.chat.session import Chat
    from openheim.repl.app import Repl
    from openheim.runtime import headless
    from openheim.term.approve import TerminalResolver, open_terminal

    terminal = open_terminal()
    cancel = asyncio.Event()
    refusals = headless.HeadlessRefusals()  # counts nothing when a terminal answers
    resolver = TerminalResolver(terminal, cancel) if terminal is not None else refusals
    try:
        chat = Chat(settings, options, resolver)
        history = history_for(settings.data_dir)
        repl = Repl(
            chat,
            sys.stdin.fileno(),
            sys.stdout,
            sys.stderr,
            history,
            tool_output=tool_output,
            refusals=refusals,
        )
        return await repl.run(first)
    finally:
        if terminal is not None:
            terminal.close()
