"""The flags of ``openheim prompts`` and the prompt flags of ``openheim run``, apart from the
commands so that building the parser imports nothing of the prompts library."""

from __future__ import annotations

import argparse


def add_prompts_actions(prompts: argparse.ArgumentParser, parser_class: type) -> None:
    """``prompts list|show|add|new|rm`` (a bare ``openheim prompts`` lists)."""
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = prompts.add_subparsers(
        dest="prompts_command", metavar="ACTION", parser_class=parser_class
    )
    sub.add_parser("list", help="the prompts, the user's and the project's")
    sub.add_parser("show", help="a prompt's file").add_argument("name")
    add = sub.add_parser("add", help="add a prompt from a file or stdin")
    add.add_argument("name")
    add.add_argument("file", nargs="?", help="a Markdown file (default: stdin)")
    add.add_argument("--force", action="store_true", help="replace a prompt of that name")
    new = sub.add_parser("new", help="write a prompt skeleton to edit")
    new.add_argument("name")
    new.add_argument("--description", default="", help="its one-line description")
    sub.add_parser("rm", help="remove one of your prompts").add_argument("name")


def add_run_prompt_flags(run: argparse.ArgumentParser) -> None:
    """``--prompt-name``, ``-s``, ``--template``, ``--arg`` and ``--tool-output``."""
    system = run.add_mutually_exclusive_group()
    system.add_argument(
        "--prompt-name", metavar="NAME", help="a named prompt as the system prompt of this run"
    )
    system.add_argument(
        "-s", "--system-prompt", metavar="TEXT|@FILE", help="the system prompt of this run"
    )
    run.add_argument("--template", metavar="NAME", help="a named prompt expanded into the message")
    run.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an argument of --template (repeatable)",
    )
    run.add_argument("--tool-output", action="store_true", help="also write tool results on stderr")
