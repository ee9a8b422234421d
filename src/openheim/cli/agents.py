"""``openheim agents``: list and show agent profiles with their resolved model and tools."""

from __future__ import annotations

import argparse
import sys

from openheim.agents import AgentProfile
from openheim.config.load import load_settings
from openheim.events import notice_line
from openheim.runtime import subagents
from openheim.term import exit_codes


def agents_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    notices = list(settings.notices)
    profiles = subagents.profiles_for(settings, notices)
    sys.stderr.writelines(f"{notice_line(notice)}\n" for notice in notices)
    if (args.agents_command or "list") == "list":
        _list(profiles)
        return exit_codes.OK
    shown = subagents.main_profile(settings, profiles, args.name)
    assert shown is not None  # a name was given: unknown names raise
    chosen = subagents.profile_provider(settings, shown)
    tools = ", ".join(shown.tools) if shown.tools is not None else "all tools"
    sys.stdout.write(
        f"name: {shown.name}\nsource: {shown.path}\ndescription: {shown.description}\n"
        f"provider: {chosen.name}\nmodel: {chosen.model}\ntools: {tools}\n"
        f"max_iterations: {shown.max_iterations or settings.max_iterations}\n\n"
        f"{shown.system_prompt.strip()}\n"
    )
    return exit_codes.OK


def _list(profiles: dict[str, AgentProfile]) -> None:
    if not profiles:
        sys.stdout.write("no agent profiles (add data_dir/agents/NAME.md)\n")
    for name, profile in sorted(profiles.items()):
        model = profile.model or "(the session's model)"
        tools = ", ".join(profile.tools) if profile.tools is not None else "all tools"
        sys.stdout.write(f"{name}: {profile.description or '-'}\n    {model}; {tools}\n")
