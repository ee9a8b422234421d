"""``openheim run``: one prompt, headless; the answer streams to stdout."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from openheim.cli.prompts import run_prompt
from openheim.cli.settings import settings_from_flags
from openheim.cli.stop import SignalStop
from openheim.config.load import Settings
from openheim.errors import ConfigError, OpenheimError
from openheim.events import Finished
from openheim.providers.base import NamedTool, ToolChoice
from openheim.redaction.secrets import SecretPolicy, redact
from openheim.runtime import PromptRun, Runtime, Session, SessionOptions, headless, policy
from openheim.term import exit_codes
from openheim.term.approve import TerminalResolver, open_terminal
from openheim.term.render import JsonRenderer, TextRenderer


def run_command(args: argparse.Namespace) -> int:
    if args.max_iterations is not None and args.max_iterations < 1:
        raise ConfigError(
            f"--max-iterations must be at least 1, got {args.max_iterations}", hint="use 1 or more"
        )
    schema = _output_schema(args)
    settings = settings_from_flags(args)
    secret_policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
    prompt, system = run_prompt(args, settings, secret_policy)
    options = SessionOptions(
        resume=args.session,
        continue_latest=args.continue_latest,
        persist=not args.no_session,
        skills=_split(args.skills) or (),
        tool_patterns=_split(args.tools),
        provider=args.provider,
        model=args.model,
        agent=args.agent,
        tool_choice=_tool_choice(args.tool_choice),
        system_prompt=system,
    )
    output = None if schema is None else Output(schema, args.output_retries)
    mode = _Mode(json=args.json, remember=args.remember, tool_output=args.tool_output)
    return asyncio.run(_run(settings, options, prompt, mode, output=output))


@dataclass(frozen=True)
class _Mode:
    """How the run reports: ``--json`` events, ``--remember`` rules, ``--tool-output``."""

    json: bool
    remember: bool
    tool_output: bool


@dataclass(frozen=True)
class Output:
    """``--output-schema``: the schema the answer must match, and the retries allowed."""

    schema: dict[str, Any]
    retries: int


def _output_schema(args: argparse.Namespace) -> dict[str, Any] | None:
    """The schema of ``--output-schema FILE``; an unreadable file, one that is not JSON, or a
    schema that is not valid is a ``ConfigError`` (exit 2)."""
    if args.output_schema is None:
        return None
    if args.json:
        raise ConfigError(
            "--output-schema prints the JSON value itself on stdout, not events",
            hint="drop --json, or drop --output-schema",
        )
    if args.output_retries < 0:
        raise ConfigError(
            f"--output-retries must be 0 or more, got {args.output_retries}", hint="use 0 or more"
        )
    from openheim.formats.schema_check import load_schema
    from openheim.runtime import structured

    schema = load_schema(Path(args.output_schema), "--output-schema")
    structured.output_schema(schema, args.output_retries)  # the checks of the library's own
    return schema


def _tool_choice(raw: str | None) -> ToolChoice | None:
    """``--tool-choice``; None (the provider's own) when not given."""
    if raw is None or raw in ("auto", "required", "none"):
        return cast("ToolChoice | None", raw)
    return NamedTool(raw)


def _split(raw: str | None) -> list[str] | None:
    return [p.strip() for p in raw.split(",") if p.strip()] if raw else None


async def _run(
    settings: Settings,
    options: SessionOptions,
    prompt: str,
    mode: _Mode,
    *,
    output: Output | None,
) -> int:
    answer = sys.stdout if output is None else sys.stderr  # stdout is the JSON value's
    render = (
        JsonRenderer(sys.stdout)
        if mode.json
        else TextRenderer(answer, sys.stderr, tool_output=mode.tool_output)
    )
    cancel = asyncio.Event()
    terminal = open_terminal()
    refusals = headless.HeadlessRefusals()  # counts nothing when a terminal answers
    resolver = TerminalResolver(terminal, cancel) if terminal is not None else refusals
    opened = False
    with SignalStop(cancel) as stop:
        try:
            runtime = Runtime(settings=settings)
            async with runtime.open_session(options, resolver=resolver) as session:
                opened = True
                stop.prompting()
                run = _prompt(session, prompt, cancel, output)
                async with run as events:
                    async for event in events:
                        render(event)
                        if isinstance(event, Finished):
                            _remember(settings, session, mode.remember)
                            lines = refusals.closing(event.denied, "openheim: ")
                            sys.stderr.writelines(f"{line}\n" for line in lines)
                            code = exit_codes.for_stop(
                                event.stop_reason, event.denied, event.reason
                            )
                            return stop.exit_code(_print_output(run, event, code))
        except OpenheimError:
            if not opened:  # the session's notices never came: give the settings' own
                for notice in settings.notices:
                    render(notice)
            raise
        except asyncio.CancelledError:
            signalled = stop.stopped_while_opening()
            if signalled is None:
                raise
            sys.stderr.write("openheim: stopped before the prompt was sent\n")
            return signalled
        finally:
            if terminal is not None:
                terminal.close()
    return exit_codes.ERROR


def _prompt(
    session: Session, prompt: str, cancel: asyncio.Event, output: Output | None
) -> PromptRun:
    if output is None:
        return session.prompt(prompt, cancel=cancel)
    return session.prompt(
        prompt, cancel=cancel, output_schema=output.schema, output_retries=output.retries
    )


def _print_output(run: PromptRun, finished: Finished, code: int) -> int:
    """With ``--output-schema``: the value as JSON on stdout, or why there is none on stderr
    (exit ``NO_VALID_OUTPUT`` when the run itself ended normally)."""
    if run.attempts is None:
        return code
    from openheim.runtime import structured

    try:
        value = run.attempts.outcome(finished.stop_reason)
    except structured.NoValidOutput as err:
        sys.stderr.write(f"openheim: error: {redact(str(err))}\n")
        return exit_codes.NO_VALID_OUTPUT if finished.stop_reason == "end_turn" else code
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    return code


def _remember(settings: Settings, session: Session, remember: bool) -> None:
    if not remember:
        return
    later = "" if settings.project_trusted else " (used once you `openheim trust` this folder)"
    for rule in policy.remember_rules(settings, session.agent.gate):
        sys.stderr.write(f"openheim: remembered {rule} in .openheim/permissions.toml{later}\n")
