"""Entry point of the ``openheim`` command: argument parsing and error reporting.

Subcommand modules are imported only when their command runs, so ``openheim --version`` stays
fast. Every failure ends as one line on stderr (a traceback only with ``--debug``) and an exit
code from ``exit_codes``.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from openheim._version import __version__
from openheim.cli import exit_codes
from openheim.errors import ConfigError, OpenheimError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"openheim: error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(exit_codes.USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="openheim", description="A fast, multi-provider LLM agent runtime.")
    parser.add_argument("--version", action="version", version=f"openheim {__version__}")
    parser.add_argument("--log-level", help="debug, info, warning (default) or error")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_run(commands.add_parser("run", help="run one prompt headless and print the answer"))
    init = commands.add_parser("init", help="write a commented config.toml and system.md")
    init.add_argument("--dir", help="where to write them (default: $OPENHEIM_HOME or ~/.openheim)")
    trust = commands.add_parser("trust", help="let a project's .openheim/config.toml widen safety")
    trust.add_argument("path", nargs="?", default=".", help="the project folder (default: .)")
    trust.add_argument("--remove", action="store_true", help="stop trusting the folder")
    trust.add_argument("--list", action="store_true", help="list trusted folders")
    _add_models(commands.add_parser("models", help="list models, or add a local GGUF model"))
    return parser


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return exit_codes.USAGE
    try:
        return _dispatch(args)
    except OpenheimError as err:
        code = exit_codes.USAGE if isinstance(err, ConfigError) else exit_codes.ERROR
        return _report(err, code, args)
    except KeyboardInterrupt:
        return exit_codes.CANCELLED


def _dispatch(args: argparse.Namespace) -> int:
    from openheim.logs import setup_logging

    try:
        setup_logging("debug" if args.debug else args.log_level)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if args.command == "run":
        from openheim.cli.run import run_command

        return run_command(args)
    if args.command == "init":
        from openheim.cli.init import init_command

        return init_command(args)
    if args.command == "models":
        from openheim.cli.models import models_command

        return models_command(args)
    from openheim.cli.trust import trust_command

    return trust_command(args)


def _report(err: OpenheimError, code: int, args: argparse.Namespace) -> int:
    if args.debug:
        traceback.print_exc()
    if getattr(args, "json", False):
        import json

        line = {"type": "error", "message": err.message, "hint": err.hint, "exit_code": code}
        print(json.dumps(line), flush=True)
    from openheim.logs import redact

    sys.stderr.write(f"openheim: error: {redact(str(err))}\n")
    return code
