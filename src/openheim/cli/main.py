"""Entry point of the ``openheim`` command: argument parsing and error reporting.

Subcommand modules are imported only when their command runs, so ``openheim --version`` stays
fast. Every failure ends as one line on stderr (a traceback only with ``--debug``) and an exit
code from ``exit_codes``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

from openheim._version import __version__
from openheim.errors import ConfigError, OpenheimError
from openheim.term import exit_codes


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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given ``argv``, only the commands it names get their options
    and actions; the others are listed with their help alone, which is all ``--help`` and
    ``--version`` show (building every command's parser costs each start several ms)."""
    parser = _Parser(prog="openheim", description="A fast, multi-provider LLM agent runtime.")
    parser.add_argument("--version", action="version", version=f"openheim {__version__}")
    parser.add_argument("--log-level", help="debug, info, warning (default) or error")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (help_text, fill) in _COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        if argv is None or name in argv:
            fill(command)
    return parser


def _add_init(init: argparse.ArgumentParser) -> None:
    init.add_argument("--dir", help="where to write them (default: $OPENHEIM_HOME or ~/.openheim)")


def _add_trust(trust: argparse.ArgumentParser) -> None:
    trust.add_argument("path", nargs="?", default=".", help="the project folder (default: .)")
    trust.add_argument("--remove", action="store_true", help="stop trusting the folder")
    trust.add_argument("--list", action="store_true", help="list trusted folders")


def _add_untrust(untrust: argparse.ArgumentParser) -> None:
    untrust.add_argument("path", nargs="?", default=".", help="the project folder (default: .)")


def _add_agents(agents: argparse.ArgumentParser) -> None:
    actions = agents.add_subparsers(dest="agents_command", metavar="ACTION", parser_class=_Parser)
    actions.add_parser("list", help="every profile with its model and tools")
    actions.add_parser("show", help="one profile in full").add_argument("name")


def _add_mcp(mcp: argparse.ArgumentParser) -> None:
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=_Parser)
    actions.add_parser("list", help="each server: transport, connected, tool count or error")
    _add_mcp_serve(actions.add_parser("serve", help="serve openheim as an MCP server"))


def _add_serve(serve: argparse.ArgumentParser) -> None:
    from openheim.cli.serve import add_serve

    add_serve(serve)


def _add_gateway(gateway: argparse.ArgumentParser) -> None:
    from openheim.cli.gateway import add_gateway

    add_gateway(gateway)


def _add_chat(chat: argparse.ArgumentParser) -> None:
    from openheim.cli.chat_args import add_chat_arguments

    add_chat_arguments(chat)


def _add_acp(acp: argparse.ArgumentParser) -> None:
    _add_agent_flags(
        acp,
        work_dir="sessions must open inside this folder (default: cwd)",
        approve="approval mode; ask sends session/request_permission to the editor",
    )


def _add_mcp_serve(serve: argparse.ArgumentParser) -> None:
    _add_agent_flags(
        serve,
        work_dir="a tool call's cwd must lie inside this (default: cwd)",
        approve="approval mode; calls it would ask about are refused (no one to ask)",
    )
    serve.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="with --http (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="with --http (default: 8765)")


def _add_agent_flags(parser: argparse.ArgumentParser, *, work_dir: str, approve: str) -> None:
    """The flags of a command that serves sessions to a client: model, provider, shell, work
    dir and approval mode (``work_dir`` and ``approve`` are their help lines)."""
    parser.add_argument("-m", "--model", help="model name (default: the provider's default_model)")
    parser.add_argument("-p", "--provider", help="provider name from config.toml")
    parser.add_argument("--allow-shell", action="store_true", default=None, help="offer shell tool")
    parser.add_argument("--work-dir", help=work_dir)
    from openheim.cli.chat_args import add_approve_flag

    add_approve_flag(parser, approve)


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
    sessions.set_defaults(cwd=False, limit=20)  # a bare `openheim sessions` lists
    sub = sessions.add_subparsers(dest="sessions_command", metavar="ACTION", parser_class=_Parser)
    listing = sub.add_parser("list", help="the latest sessions")
    listing.add_argument("--cwd", action="store_true", help="only sessions of this directory")
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    sub.add_parser("show", help="a session as Markdown").add_argument("id")
    sub.add_parser("delete", help="delete a session").add_argument("id")
    undo = sub.add_parser("undo", help="restore the files of the last turns and rewind to them")
    undo.add_argument("id", nargs="?", help="session id or prefix (default: latest in this dir)")
    undo.add_argument("--turns", type=int, default=1, help="how many turns (default 1)")
    undo.add_argument("--force", action="store_true", help="overwrite files changed since")
    sub.add_parser("checkpoints", help="a session's checkpoints for undo").add_argument("id")
    export = sub.add_parser("export", help="a session as Markdown or JSON")
    export.add_argument("id")
    export.add_argument("--format", choices=["md", "json"], default="md")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    search = sub.add_parser("search", help="full-text search over messages")
    search.add_argument("text", nargs="+")
    search.add_argument("--limit", type=int, default=20)
    imp = sub.add_parser("import", help="import Rust Openheim history or a JSON export")
    imp.add_argument("source", nargs="?", help="folder or file (default: data_dir/history)")
    sub.add_parser("compact", help="summarise a session's older turns now").add_argument("id")
    migrate = sub.add_parser("migrate", help="copy the SQLite sessions into PostgreSQL")
    migrate.add_argument("--to", required=True, metavar="URL", help="postgresql://... URL")


def _add_models(models: argparse.ArgumentParser) -> None:
    sub = models.add_subparsers(dest="models_command", metavar="ACTION", parser_class=_Parser)
    sub.add_parser("list", help="configured providers' models and local GGUF files")
    add = sub.add_parser("add", help="copy or download a GGUF file into data_dir/models")
    add.add_argument("source", help="a path or an http(s) URL of a .gguf file")
    add.add_argument("--sha256", help="expected checksum; the file is refused if it differs")


def _add_setup(setup: argparse.ArgumentParser) -> None:
    from openheim.cli.setup import add_setup

    add_setup(setup)


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
        metavar="CHOICE",
        help="first model call: auto, required, none, or a tool name (default: the provider's "
        "tool_choice, auto unless set)",
    )
    run.add_argument("--agent", help="run an agent profile (data_dir/agents/NAME.md) as the agent")
    run.add_argument(
        "--output-schema",
        metavar="FILE",
        help="the answer must be JSON valid against this JSON schema; printed on stdout",
    )
    run.add_argument(
        "--output-retries",
        type=int,
        default=3,
        metavar="N",
        help="with --output-schema: attempts after the first (default 3)",
    )
    from openheim.cli.chat_args import add_approve_flag, add_resume_flags

    add_approve_flag(run, "approval mode (default ask; what it asks is denied with no terminal)")
    run.add_argument(
        "--remember",
        action="store_true",
        help="write 'always' answers to the project's .openheim/permissions.toml",
    )
    which = run.add_mutually_exclusive_group()
    add_resume_flags(which)
    which.add_argument("--no-session", action="store_true", help="do not store this session")
    from openheim.cli.prompt_args import add_run_prompt_flags

    add_run_prompt_flags(run)


def _add_prompts(prompts: argparse.ArgumentParser) -> None:
    from openheim.cli.prompt_args import add_prompts_actions

    add_prompts_actions(prompts, _Parser)


_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": ("run one prompt headless and print the answer", _add_run),
    "chat": ("the interactive chat (the default in a terminal)", _add_chat),
    "serve": ("serve REST, WebSocket, ACP and the web page", _add_serve),
    "acp": ("serve the Agent Client Protocol on stdio (editors)", _add_acp),
    "init": ("write a commented config.toml and system.md", _add_init),
    "trust": ("let a project's .openheim/config.toml widen safety", _add_trust),
    "untrust": ("stop trusting a project folder", _add_untrust),
    "models": ("list models, or add a local GGUF model", _add_models),
    "sessions": ("list, show, export, search, compact and migrate sessions", _add_sessions),
    "permissions": ("approval rules: list, add, check", _add_permissions),
    "agents": ("agent profiles for --agent and delegate_task", _add_agents),
    "mcp": ("MCP servers from config.toml, or serve openheim as one", _add_mcp),
    "setup": ("register openheim's MCP server with Claude Code, Codex, OpenCode", _add_setup),
    "prompts": ("named prompts: list, show, add, new, rm", _add_prompts),
    "gateway": ("answer on Telegram, Discord and WhatsApp", _add_gateway),
}
"""Each command: its help line, and what adds its options and actions to its parser (its
module is imported only when it runs: ``_handler``)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` and return its exit code.

    Without ``argv`` it runs as the program, on this process's arguments, and ends the process
    itself (``cli.process``: its start-up hooks are installed first, garbage collection waits
    until start-up is over, and the exit skips the interpreter's teardown)."""
    if argv is not None:
        return _main(list(argv), program=False)
    from openheim.cli import process

    process.lenient_streams()
    try:
        with process.collecting_later():
            code = _program(sys.argv[1:])
    except SystemExit as stop:  # --help, --version, SIGTERM
        if not isinstance(stop.code, int | None):
            raise
        code = stop.code or 0
    return process.exit_now(code)


def _program(argv: list[str]) -> int:
    """``_main`` as the program, its start-up hooks installed before any command runs."""
    import os

    from openheim.cli import process

    try:
        process.install_hooks(os.environ)
    except ConfigError as err:
        sys.stderr.write(f"openheim: error: {err}\n")
        return exit_codes.USAGE
    return _main(argv, program=True)


def _main(argv: list[str], *, program: bool) -> int:
    try:
        args = build_parser(argv).parse_args(argv)
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
            return _dispatch(args, program=program)
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
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _dispatch(args: argparse.Namespace, *, program: bool) -> int:
    from openheim.process.logs import setup_logging

    try:
        setup_logging("debug" if args.debug else args.log_level)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    handler = _handler(args.command)
    if program:
        from openheim.cli import process

        process.started()
    if args.command == "untrust":
        args.remove, args.list = True, False
    return handler(args)


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs ``command``: ``NAME_command`` of ``openheim.cli.NAME`` (``untrust``
    is ``trust``'s), its module imported now."""
    name = "trust" if command == "untrust" else command
    handler: Callable[[argparse.Namespace], int]
    handler = getattr(importlib.import_module(f"openheim.cli.{name}"), f"{name}_command")
    return handler


def _report(err: OpenheimError, code: int, args: argparse.Namespace) -> int:
    """The error as one stderr line, and with ``--json`` as a ``failed`` event on stdout."""
    from openheim.redaction.secrets import redact

    if args.debug:
        import traceback

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
