"""Entry point of the ``openheim`` command: argument parsing and error reporting.

Subcommand modules are imported only when their command runs, so ``openheim --version`` stays
fast. Every failure ends as one line on stderr (a traceback only with ``--debug``) and an exit
code from ``exit_codes``.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from types import FrameType

from openheim._version import __version__
from openheim.cli import exit_codes
from openheim.errors import ConfigError, OpenheimError


class _UsageError(Exception):
    """Bad arguments: argparse's message, and the usage of the command that refused them."""

    def __init__(self, message: str, parser: argparse.ArgumentParser) -> None:
        super().__init__(message)
        self.message = message
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message, self)


def _usage_error(err: _UsageError, argv: Sequence[str]) -> int:
    """Bad arguments: the usage and one error line on stderr, and a ``failed`` event on stdout
    when ``run --json`` was asked for (its output must stay JSON lines)."""
    err.parser.print_usage(sys.stderr)
    hint = f"see `{err.parser.prog} --help`"
    if "run" in argv and "--json" in argv:
        _print_failed(err.message, hint, "UsageError", exit_codes.USAGE)
    sys.stderr.write(f"openheim: error: {err.message} ({hint})\n")
    return exit_codes.USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="openheim", description="A fast, multi-provider LLM agent runtime.")
    parser.add_argument("--version", action="version", version=f"openheim {__version__}")
    parser.add_argument("--log-level", help="debug, info, warning (default) or error")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_run(commands.add_parser("run", help="run one prompt headless and print the answer"))
    _add_chat(commands.add_parser("chat", help="the interactive chat (the default in a terminal)"))
    _add_acp(commands.add_parser("acp", help="serve the Agent Client Protocol on stdio (editors)"))
    init = commands.add_parser("init", help="write a commented config.toml and system.md")
    init.add_argument("--dir", help="where to write them (default: $OPENHEIM_HOME or ~/.openheim)")
    trust = commands.add_parser("trust", help="let a project's .openheim/config.toml widen safety")
    trust.add_argument("path", nargs="?", default=".", help="the project folder (default: .)")
    trust.add_argument("--remove", action="store_true", help="stop trusting the folder")
    trust.add_argument("--list", action="store_true", help="list trusted folders")
    untrust = commands.add_parser("untrust", help="stop trusting a project folder")
    untrust.add_argument("path", nargs="?", default=".", help="the project folder (default: .)")
    _add_models(commands.add_parser("models", help="list models, or add a local GGUF model"))
    _add_sessions(commands.add_parser("sessions", help="list, show, export and search sessions"))
    _add_permissions(commands.add_parser("permissions", help="approval rules: list, add, check"))
    agents = commands.add_parser("agents", help="agent profiles for --agent and delegate_task")
    agent_actions = agents.add_subparsers(
        dest="agents_command", metavar="ACTION", parser_class=_Parser
    )
    agent_actions.add_parser("list", help="every profile with its model and tools")
    agent_actions.add_parser("show", help="one profile in full").add_argument("name")
    mcp = commands.add_parser("mcp", help="MCP servers from config.toml, or serve openheim as one")
    mcp_actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=_Parser)
    mcp_actions.add_parser("list", help="each server: transport, connected, tool count or error")
    _add_mcp_serve(mcp_actions.add_parser("serve", help="serve openheim as an MCP server"))
    return parser


def _add_chat(chat: argparse.ArgumentParser) -> None:
    from openheim.cli.chat_args import add_chat_arguments

    add_chat_arguments(chat)


def _add_acp(acp: argparse.ArgumentParser) -> None:
    acp.add_argument("-m", "--model", help="model name (default: the provider's default_model)")
    acp.add_argument("-p", "--provider", help="provider name from config.toml")
    acp.add_argument("--allow-shell", action="store_true", default=None, help="offer shell tool")
    acp.add_argument("--work-dir", help="sessions must open inside this folder (default: cwd)")
    acp.add_argument(
        "--approve",
        choices=["ask", "auto", "deny"],
        help="approval mode; ask sends session/request_permission to the editor",
    )


def _add_mcp_serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("-m", "--model", help="model name (default: the provider's default_model)")
    serve.add_argument("-p", "--provider", help="provider name from config.toml")
    serve.add_argument("--allow-shell", action="store_true", default=None, help="offer shell tool")
    serve.add_argument("--work-dir", help="a tool call's cwd must lie inside this (default: cwd)")
    serve.add_argument(
        "--approve",
        choices=["ask", "auto", "deny"],
        help="approval mode; calls it would ask about are refused (no one to ask)",
    )
    serve.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="with --http (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="with --http (default: 8765)")


def _port(raw: str) -> int:
    if not raw.isdigit() or int(raw) > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number (0 to 65535)")
    return int(raw)


def _add_permissions(permissions: argparse.ArgumentParser) -> None:
    sub = permissions.add_subparsers(
        dest="permissions_command", metavar="ACTION", parser_class=_Parser
    )
    sub.add_parser("list", help="the approval mode and the rules in force")
    for action in ("add", "remove"):
        edit = sub.add_parser(
            action, help=f"{action} a rule such as 'allow command \"git status\"'"
        )
        edit.add_argument("rule", help="[allow|deny] tool|command|path PATTERN")
        edit.add_argument("--project", action="store_true", help="the project's file, not yours")
    check = sub.add_parser("check", help="which rule decides a call, and why")
    check.add_argument("tool", help="a tool name, e.g. execute_command")
    check.add_argument("arguments", help='its arguments as JSON, e.g. \'{"command": "ls"}\'')


def _add_sessions(sessions: argparse.ArgumentParser) -> None:
    sub = sessions.add_subparsers(dest="sessions_command", metavar="ACTION", parser_class=_Parser)
    listing = sub.add_parser("list", help="the latest sessions")
    listing.add_argument("--cwd", action="store_true", help="only sessions of this directory")
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    sub.add_parser("show", help="a session as Markdown").add_argument("id")
    sub.add_parser("delete", help="delete a session").add_argument("id")
    export = sub.add_parser("export", help="a session as Markdown or JSON")
    export.add_argument("id")
    export.add_argument("--format", choices=["md", "json"], default="md")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    search = sub.add_parser("search", help="full-text search over messages")
    search.add_argument("text", nargs="+")
    search.add_argument("--limit", type=int, default=20)
    imp = sub.add_parser("import", help="import Rust Openheim history or a JSON export")
    imp.add_argument("source", nargs="?", help="folder or file (default: data_dir/history)")


def _add_models(models: argparse.ArgumentParser) -> None:
    sub = models.add_subparsers(dest="models_command", metavar="ACTION", parser_class=_Parser)
    sub.add_parser("list", help="configured providers' models and local GGUF files")
    add = sub.add_parser("add", help="copy or download a GGUF file into data_dir/models")
    add.add_argument("source", help="a path or an http(s) URL of a .gguf file")
    add.add_argument("--sha256", help="expected checksum; the file is refused if it differs")


def _add_run(run: argparse.ArgumentParser) -> None:
    run.add_argument("prompt", nargs="*", help="the prompt; @path arguments attach files")
    run.add_argument("-m", "--model", help="model name (default: the provider's default_model)")
    run.add_argument("-p", "--provider", help="provider name from config.toml")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.add_argument("--max-iterations", type=int, help="model calls allowed (default 10)")
    run.add_argument("--allow-shell", action="store_true", default=None, help="offer shell tool")
    run.add_argument("--work-dir", help="directory the agent may touch (default: cwd)")
    run.add_argument("--tools", help="comma-separated fnmatch patterns of tools to offer")
    run.add_argument("--skills", help="comma-separated skills to activate in this session")
    run.add_argument(
        "--tool-choice",
        default="auto",
        metavar="CHOICE",
        help="first model call: auto (default), required, none, or a tool name",
    )
    run.add_argument("--agent", help="run an agent profile (data_dir/agents/NAME.md) as the agent")
    run.add_argument(
        "--approve",
        choices=["ask", "auto", "deny"],
        help="approval mode: ask (default; denied when no terminal), auto or deny",
    )
    run.add_argument(
        "--remember",
        action="store_true",
        help="write 'always' answers to the project's .openheim/permissions.toml",
    )
    from openheim.cli.chat_args import add_resume_flags

    which = run.add_mutually_exclusive_group()
    add_resume_flags(which)
    which.add_argument("--no-session", action="store_true", help="do not store this session")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as err:
        return _usage_error(err, argv)
    if args.command is None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            build_parser().print_help()
            return exit_codes.USAGE
        from openheim.cli.chat_args import chat_defaults

        args = chat_defaults(args)
    try:
        with _sigterm_exits():
            return _dispatch(args)
    except OpenheimError as err:
        code = exit_codes.USAGE if err.usage_error else exit_codes.ERROR
        return _report(err, code, args)
    except KeyboardInterrupt:
        return exit_codes.CANCELLED


def _exit_terminated(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(exit_codes.TERMINATED)


@contextlib.contextmanager
def _sigterm_exits() -> Iterator[None]:
    """While a command runs, SIGTERM unwinds it as Ctrl-C does (its clean-up runs) and exits
    143; ``run`` and ``acp`` put their own handlers on their event loop meanwhile."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _dispatch(args: argparse.Namespace) -> int:
    from openheim.logs import setup_logging

    try:
        setup_logging("debug" if args.debug else args.log_level)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if args.command == "run":
        from openheim.cli.run import run_command

        return run_command(args)
    if args.command == "chat":
        from openheim.cli.chat import chat_command

        return chat_command(args)
    if args.command == "acp":
        from openheim.cli.acp import acp_command

        return acp_command(args)
    if args.command == "init":
        from openheim.cli.init import init_command

        return init_command(args)
    if args.command == "sessions":
        from openheim.cli.sessions import sessions_command

        return sessions_command(args)
    if args.command == "agents":
        from openheim.cli.agents import agents_command

        return agents_command(args)
    if args.command == "mcp":
        from openheim.cli.mcp import mcp_command

        return mcp_command(args)
    if args.command == "permissions":
        from openheim.cli.permissions import permissions_command

        return permissions_command(args)
    if args.command == "models":
        from openheim.cli.models import models_command

        return models_command(args)
    from openheim.cli.trust import trust_command

    if args.command == "untrust":
        args.remove, args.list = True, False
    return trust_command(args)


def _report(err: OpenheimError, code: int, args: argparse.Namespace) -> int:
    """The error as one stderr line, and with ``--json`` as a ``failed`` event on stdout."""
    from openheim.secrets import redact

    if args.debug:
        sys.stderr.write(redact(traceback.format_exc()))
    if getattr(args, "json", False):
        hint = None if err.hint is None else redact(err.hint)
        _print_failed(redact(err.message), hint, type(err).__name__, code)
    sys.stderr.write(f"openheim: error: {redact(str(err))}\n")
    return code


def _print_failed(message: str, hint: str | None, error: str, code: int) -> None:
    import json

    from openheim.events import Failed, event_to_dict

    line = event_to_dict(Failed(message, hint, error, code))
    print(json.dumps(line, ensure_ascii=False), flush=True)
