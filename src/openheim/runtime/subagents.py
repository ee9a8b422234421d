"""Subagents of a session: profiles, the ``delegate_task`` spawner, and profiles as main agents.

The spawner gives each delegated run its own provider when the profile names a model (closed
when the session closes), and stores the run's transcript as a child session of the parent's,
so ``openheim sessions show`` can read it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from openheim.agents.profiles import AgentProfile, load_profiles
from openheim.config.load import Settings
from openheim.config.providers import resolve_provider
from openheim.config.trust import is_trusted
from openheim.errors import ConfigError
from openheim.events import Notice
from openheim.messages import Message
from openheim.providers.base import Provider, ProviderSettings
from openheim.runtime.history import PersistentHistory
from openheim.skills.setup import find_repo_root

if TYPE_CHECKING:
    from collections.abc import Callable

    from openheim.agents.delegate import SubagentRequest, SubagentResult
    from openheim.loop import Agent
    from openheim.store.base import SessionStore


def profiles_for(settings: Settings, notices: list[Notice]) -> dict[str, AgentProfile]:
    """The agent profiles of the user and the project; each warning adds a notice."""
    root = settings.project_root or find_repo_root(Path(settings.work_dir))
    trusted = root is not None and is_trusted(root, settings.data_dir)
    profiles, warnings = load_profiles(settings.data_dir, root, trusted)
    notices.extend(Notice(line, "warning", "agents") for line in warnings)
    return profiles


def main_profile(
    settings: Settings, profiles: dict[str, AgentProfile], wanted: str | None
) -> AgentProfile | None:
    """``--agent NAME`` or ``default_agent``: the profile to run as the main agent."""
    name = wanted or settings.default_agent
    if name is None:
        return None
    profile = profiles.get(name)
    if profile is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(
            f"unknown agent {name!r} (available: {known})",
            hint="add data_dir/agents/NAME.md, or pick one from `openheim agents list`",
        )
    return profile


def profile_provider(settings: Settings, profile: AgentProfile) -> ProviderSettings:
    """A profile's own model (and provider, only together with a model), else the session's."""
    if not profile.model:
        return resolve_provider(settings)
    provider = profile.provider or settings.provider
    return resolve_provider(dataclasses.replace(settings, provider=provider, model=profile.model))


class Spawner:
    """Runs ``delegate_task`` requests for one session (``parent`` and ``session_id`` are set
    once the session exists)."""

    def __init__(
        self,
        settings: Settings,
        stack: contextlib.AsyncExitStack,
        store: SessionStore | None,
        build: Callable[[Settings, ProviderSettings], Provider],
    ) -> None:
        self.settings = settings
        self.stack = stack
        self.store = store
        self.build = build
        self.parent: Agent | None = None
        self.session_id: str | None = None

    async def __call__(self, request: SubagentRequest) -> SubagentResult:
        from openheim.agents.delegate import run_subagent

        parent = self.parent
        assert parent is not None, "the spawner is used before its session exists"
        provider, model, max_tokens = parent.provider, parent.model, parent.max_tokens
        if request.model:
            wanted = request.provider or self.settings.provider
            chosen = resolve_provider(
                dataclasses.replace(self.settings, provider=wanted, model=request.model)
            )
            provider = self.build(self.settings, chosen)
            self.stack.push_async_callback(provider.aclose)
            model, max_tokens = chosen.model, chosen.max_tokens
        history = self._history(request, model)
        return await run_subagent(
            parent, request, provider=provider, model=model, history=history, max_tokens=max_tokens
        )

    def _history(self, request: SubagentRequest, model: str) -> list[Message]:
        """A child session linked to the parent's, when sessions are stored."""
        if self.store is None or self.session_id is None:
            return []
        record = self.store.create(
            cwd=str(self.settings.work_dir),
            provider=self.settings.provider or "",
            model=model,
            title=f"[{request.name}] {request.task[:60]}",
            parent_id=self.session_id,
        )
        return PersistentHistory(self.store, record.id, [])
