"""``openheim prompts``: list, show, add, create and remove named prompts; and what ``run``
makes of ``--prompt-name``, ``-s``, ``--template`` and ``--arg``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from openheim.cli.prompt import build_prompt, read_stdin
from openheim.config.load import Settings, load_settings
from openheim.errors import ConfigError
from openheim.files.hostile import read_regular
from openheim.redaction.secrets import SecretPolicy
from openheim.runtime import attach
from openheim.term import exit_codes

if TYPE_CHECKING:
    from openheim.prompts.library import PromptLibrary


def _library(settings: Settings) -> PromptLibrary:
    """The library, imported only by a command that uses it (``run`` mostly does not)."""
    from openheim.prompts.project import prompts_for

    return prompts_for(settings, _warn)


def _warn(line: str) -> None:
    sys.stderr.write(f"openheim: {line}\n")


def prompts_command(args: argparse.Namespace) -> int:
    from openheim.prompts.files import add_prompt, new_prompt, remove_prompt

    library = _library(load_settings())
    action = args.prompts_command or "list"
    if action == "list":
        found = library.available()
        lines = [p.summary() for p in found] or [f"no prompts yet (add them to {library.user_dir})"]
        sys.stdout.write("\n".join(lines) + "\n")
    elif action == "show":
        prompt = library.get(args.name)
        sys.stdout.write(prompt.file_text)
    elif action == "add":
        path = add_prompt(library, args.name, _text_of(args.file), force=args.force)
        sys.stdout.write(f"added prompt {args.name} ({path})\n")
    elif action == "new":
        path = new_prompt(library, args.name, args.description)
        sys.stdout.write(f"wrote {path}: edit it, then use it as --template or --prompt-name\n")
    else:
        path = remove_prompt(library, args.name)
        sys.stdout.write(f"removed prompt {args.name} ({path})\n")
    return exit_codes.OK


def _text_of(file: str | None) -> str:
    """The text of ``prompts add``: the regular file ``file`` or piped stdin, at most a prompt
    file's size, UTF-8 (as the library reads it back)."""
    from openheim.prompts.library import MAX_BYTES

    if file is None or file == "-":
        if sys.stdin.isatty():
            raise ConfigError("no prompt text", hint="give a FILE, or pipe the prompt to stdin")
        data, shown = read_stdin(sys.stdin, MAX_BYTES), "stdin"
    else:
        try:
            data = read_regular(Path(file).expanduser(), MAX_BYTES)
        except ValueError as err:  # a FIFO, a device, a folder, too large
            raise ConfigError(f"{file}: {err}", hint="give a Markdown file") from None
        except OSError as err:
            raise ConfigError(
                f"cannot read {file}: {err.strerror or err}", hint="give a Markdown file"
            ) from None
        shown = file
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{shown} is larger than {MAX_BYTES // 1024} KiB", hint="shorten it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{shown} is not UTF-8 text (byte {err.start + 1})", hint="save it as UTF-8 text"
        ) from None


def run_prompt(
    args: argparse.Namespace, settings: Settings, policy: SecretPolicy
) -> tuple[str, str | None]:
    """The message of ``openheim run`` and its system prompt (None: the usual one)."""
    library = _library(settings) if args.prompt_name or args.template else None
    attacher = attach.Attacher(settings.work_dir, policy, Path.cwd())
    system = None
    if args.prompt_name and library is not None:
        system = library.system_prompt(args.prompt_name)
    elif args.system_prompt is not None:
        system = _system_text(args.system_prompt, attacher)
    if args.template is None or library is None:
        if args.arg:
            raise ConfigError("--arg needs --template", hint="add --template NAME")
        return build_prompt(args.prompt, attacher), system
    from openheim.prompts.template import expand, parse_given

    template = library.get(args.template)
    given = parse_given(args.arg)
    text = build_prompt(args.prompt, attacher, required=False)
    message = expand(template.name, template.text, template.arguments, given, text)
    if not message:
        raise ConfigError(f"prompt {template.name!r} expands to nothing", hint="give it text")
    return message, system


def _system_text(raw: str, attacher: attach.Attacher) -> str:
    """``-s TEXT`` or ``-s @FILE`` (read as an attachment is)."""
    text = attacher.read(raw[1:]) if raw.startswith("@") else raw
    if not text.strip():
        raise ConfigError("the system prompt is empty", hint="give -s some text or @FILE")
    return text
