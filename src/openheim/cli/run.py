"""``openheim run``: one prompt, headless; the answer streams to stdout."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from openheim.cli import exit_codes
from openheim.cli.prompt import build_prompt
from openheim.cli.render import JsonRenderer, TextRenderer
from openheim.config.load import Overrides, Settings, load_settings
from openheim.config.providers import LOCAL_KINDS, resolve_provider
from openheim.errors import ConfigError
from openheim.events import Finished
from openheim.messages import Message
from openheim.providers.base import ProviderSettings
from openheim.runtime import open_agent


def run_command(args: argparse.Namespace) -> int:
    if args.max_iterations is not None and args.max_iterations < 1:
        raise ConfigError(
            f"--max-iterations must be at least 1, got {args.max_iterations}", hint="use 1 or more"
        )
    prompt = build_prompt(args.prompt, Path.cwd())
    overrides = Overrides(
        provider=args.provider,
        model=args.model,
        max_iterations=args.max_iterations,
        allow_shell=args.allow_shell,
        work_dir=args.work_dir,
    )
    settings = load_settings(overrides)
    for notice in settings.notices:
        sys.stderr.write(f"openheim: {notice}\n")
    chosen = resolve_provider(settings)
    if settings.provider is None and not settings.providers and chosen.kind in LOCAL_KINDS:
        sys.stderr.write(
            f"openheim: using the embedded local model {chosen.model} (no provider is "
            "configured); for a hosted model set OPENAI_API_KEY, ANTHROPIC_API_KEY or "
            "GEMINI_API_KEY, or run `openheim init`\n"
        )
    patterns = [p.strip() for p in args.tools.split(",") if p.strip()] if args.tools else None
    return asyncio.run(_run(settings, chosen, prompt, patterns, json_mode=args.json))


async def _run(
    settings: Settings,
    chosen: ProviderSettings,
    prompt: str,
    patterns: list[str] | None,
    *,
    json_mode: bool,
) -> int:
    render = JsonRenderer(sys.stdout) if json_mode else TextRenderer(sys.stdout, sys.stderr)
    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, cancel.set)
    loop.add_signal_handler(signal.SIGTERM, cancel.set)
    try:
        async with open_agent(settings, tool_patterns=patterns, provider_settings=chosen) as agent:
            history = [Message.user(prompt)]
            async for event in agent.run(history, cancel=cancel):
                render(event)
                if isinstance(event, Finished):
                    return exit_codes.for_stop(event.stop_reason, event.denied)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
    return exit_codes.ERROR
