"""The flags of ``openheim chat``, apart from the command itself so that building the parser
(on every ``openheim`` invocation) imports nothing of the chat; and the ``--approve`` flag that
``run``, ``acp`` and ``mcp serve`` share with it."""

from __future__ import annotations

import argparse

from openheim.config.schema import APPROVAL_MODES

MODES_HELP = "ask, edits (auto for edits: file edits in the work dir run unasked), auto or deny"


def add_chat_arguments(chat: argparse.ArgumentParser) -> None:
    """The ``chat`` command's flags (also the defaults of ``openheim`` with no command)."""
    chat.add_argument("prompt", nargs="*", help="a first prompt, sent at once")
    add_resume_flags(chat.add_mutually_exclusive_group())
    chat.add_argument("--agent", help="run an agent profile as the agent")
    chat.add_argument("--skills", help="comma-separated skills to activate")
    chat.add_argument("-m", "--model", help="model name (default: the provider's default_model)")
    chat.add_argument("-p", "--provider", help="provider name from config.toml")
    chat.add_argument("--allow-shell", action="store_true", default=None, help="offer shell tool")
    chat.add_argument("--work-dir", help="directory the agent may touch (default: cwd)")
    add_approve_flag(chat, "approval mode (default ask)")
    chat.add_argument("--no-tui", action="store_true", help="a plain line REPL instead of the UI")
    chat.add_argument(
        "--tool-output",
        action="store_true",
        help="plain REPL: also write tool results on stderr (the UI shows them in tool items)",
    )


def add_approve_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``--approve MODE``, any of the approval modes; ``what`` starts its help line."""
    parser.add_argument("--approve", choices=APPROVAL_MODES, help=f"{what}: {MODES_HELP}")


def add_resume_flags(which: argparse._MutuallyExclusiveGroup) -> None:
    """``--session ID`` and ``--continue`` (``run`` and ``chat`` both take them)."""
    which.add_argument("--session", metavar="ID", help="continue a stored session (id or prefix)")
    which.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of this directory",
    )


def chat_defaults(top: argparse.Namespace) -> argparse.Namespace:
    """A bare ``openheim``'s arguments: the chat's defaults with the top-level flags kept."""
    parser = argparse.ArgumentParser(add_help=False)
    add_chat_arguments(parser)
    args = parser.parse_args([])
    for name, value in vars(top).items():
        setattr(args, name, value)
    args.command = "chat"
    return args
