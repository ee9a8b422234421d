"""``openheim run``: one prompt, headless; the answer streams to stdout."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import cast

from openheim.api import Runtime
from openheim.cli import exit_codes
from openheim.cli.approve import TerminalResolver, open_terminal
from openheim.cli.prompts import run_prompt
from openheim.cli.refusal import HeadlessRefusals, summary
from openheim.cli.render import JsonRenderer, TextRenderer
from openheim.cli.settings import settings_from_flags
from openheim.cli.stop import SignalStop
from openheim.config.load import Settings
from openheim.errors import ConfigError, OpenheimError
from openheim.events import Finished
from openheim.providers.base import NamedTool, ToolChoice
from openheim.runtime import Session, SessionOptions
from openheim.runtime.policy import remember_rules
from openheim.secrets import SecretPolicy


def run_command(args: argparse.Namespace) -> int:
    if args.max_iterations is not None and args.max_iterations < 1:
        raise ConfigError(
            f"--max-iterations must be at least 1, got {args.max_iterations}", hint="use 1 or more"
        )
    settings = settings_from_flags(args)
    policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
    prompt, system = run_prompt(args, settings, policy)
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
    render = (
        JsonRenderer(sys.stdout)
        if args.json
        else TextRenderer(sys.stdout, sys.stderr, tool_output=args.tool_output)
    )
    return asyncio.run(_run(settings, options, prompt, render, remember=args.remember))


def _tool_choice(raw: str) -> ToolChoice:
    if raw in ("auto", "required", "none"):
        return cast("ToolChoice", raw)
    return NamedTool(raw)


def _split(raw: str | None) -> list[str] | None:
    return [p.strip() for p in raw.split(",") if p.strip()] if raw else None


async def _run(
    settings: Settings,
    options: SessionOptions,
    prompt: str,
    render: JsonRenderer | TextRenderer,
    *,
    remember: bool,
) -> int:
    cancel = asyncio.Event()
    terminal = open_terminal()
    refusals = HeadlessRefusals() if terminal is None else None
    resolver = TerminalResolver(terminal, cancel) if terminal is not None else refusals
    opened = False
    with SignalStop(cancel) as stop:
        try:
            runtime = Runtime(settings=settings)
            async with runtime.open_session(options, resolver=resolver) as session:
                opened = True
                stop.prompting()
                async with session.prompt(prompt, cancel=cancel) as events:
                    async for event in events:
                        render(event)
                        if isinstance(event, Finished):
                            _remember(settings, session, remember)
                            lines = summary(event.denied, refusals)
                            sys.stderr.writelines(f"{line}\n" for line in lines)
                            return stop.exit_code(
                                exit_codes.for_stop(event.stop_reason, event.denied)
                            )
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


def _remember(settings: Settings, session: Session, remember: bool) -> None:
    if not remember:
        return
    later = "" if settings.project_trusted else " (used once you `openheim trust` this folder)"
    for rule in remember_rules(settings, session.agent.gate):
        sys.stderr.write(f"openheim: remembered {rule} in .openheim/permissions.toml{later}\n")
