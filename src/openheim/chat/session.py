"""``Chat``: the session a chat surface talks to, and what its commands do to it (a new
session, a restored one, another model or agent, a skill activated).

A chat holds one ``Session`` at a time, kept open by a ``SessionHost`` (in a task of its own,
so the surface may open and close it from any task). Switching what a session is made of (provider,
agent, skills) closes it and resumes the same stored session with the new choice, in the
approval mode it had (a mode chosen during the session stays; a new session starts afresh).
"""

from __future__ import annotations

import dataclasses

from openheim.approval import Resolver
from openheim.config.load import Settings
from openheim.config.providers import provider_entries
from openheim.errors import ConfigError, SessionBusy, SessionNotFound, StoreError
from openheim.messages import Message
from openheim.redaction.secrets import SecretPolicy
from openheim.runtime import (
    PromptRun,
    Runtime,
    Session,
    SessionHost,
    SessionOptions,
    attach,
    commands,
    models,
    policy,
    prompt_commands,
    replay,
)
from openheim.skills import SkillsManager, skills_for
from openheim.store import SessionRecord, open_store

CHAT = "chat"
"""The key of the chat's one session on its host."""


class Chat:
    """One interactive chat over a runtime: the open session and the options it came from."""

    def __init__(
        self, settings: Settings, options: SessionOptions, resolver: Resolver | None = None
    ) -> None:
        self.runtime = Runtime(settings=settings)
        self.settings = settings
        self.options = options
        self.resolver = resolver
        self.policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
        self._host = SessionHost(self.runtime)
        self._session: Session | None = None
        self._skills: SkillsManager | None = None

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the chat has no open session; call open() first")
        return self._session

    @property
    def opened(self) -> bool:
        """Whether a session is open."""
        return self._session is not None

    @property
    def skills(self) -> SkillsManager:
        if self._skills is None:
            self._skills = skills_for(self.settings)
        return self._skills

    def skill_names(self) -> list[str]:
        return [info.name for info in self.skills.available()]

    @property
    def prompt_commands(self) -> prompt_commands.PromptCommands:
        """The skills and templates typed as ``/NAME``, expanded into the prompt."""
        return prompt_commands.PromptCommands.of(self.settings, self.skills)

    def command_names(self) -> list[str]:
        """What ``/NAME`` may name besides the registry's commands: skills, then templates."""
        return self.prompt_commands.names()

    def help(self, surface: commands.Surface) -> str:
        """The commands ``surface`` offers, then this chat's skills and templates."""
        return commands.help_text(surface, self.command_names())

    @property
    def provider(self) -> str:
        ps = self.session.provider_settings
        return ps.name if ps is not None else (self.settings.provider or "")

    async def open(self) -> Session:
        """Open the session the options name (a new one, or the one to resume)."""
        _, self._session = await self._host.open(CHAT, self.options, resolver=self.resolver)
        return self._session

    async def close(self) -> str | None:
        """Close the session (a running prompt is cancelled; its lease is released); the id of
        the stored session left to resume. One closed with no message is removed from the
        store: there is nothing in it to resume, and it would crowd the session list."""
        session_id = self._session.id if self._session is not None else None
        self._session = None
        await self._host.close(CHAT)
        return None if session_id is None else self._kept(session_id)

    def _kept(self, session_id: str) -> str | None:
        """``session_id`` when it holds messages; else None, and it is removed (unless
        another process holds it now)."""
        store = open_store(self.settings.data_dir, self.settings.store_url)
        try:
            if store.get(session_id).message_count:
                return session_id
            store.delete(session_id)
        except (SessionNotFound, SessionBusy, StoreError):
            pass  # gone already, or another process took it up: leave it be
        finally:
            store.close()
        return None

    async def new(self) -> Session:
        """A new session with the same model and startup skills; approvals start afresh."""
        await self.close()
        self.options = dataclasses.replace(self.options, resume=None, continue_latest=False)
        return await self.open()

    async def restore(self, session_id: str) -> tuple[list[replay.Replayed], str | None]:
        """Resume a stored session; its conversation as events, and a warning when its provider
        is no longer configured (the configured default answers then)."""
        store_record = self.record(session_id)
        warning = None
        provider, model = self.options.provider, self.options.model
        if store_record.provider not in provider_entries(self.settings):
            warning = (
                f"this session's provider {store_record.provider!r} is no longer configured; "
                f"continuing with {self.settings.provider}"
            )
            provider, model = self.settings.provider, self.settings.model
        await self.close()
        self.options = dataclasses.replace(
            self.options, resume=store_record.id, continue_latest=False,
            provider=provider, model=model,
        )  # fmt: skip
        session = await self.open()
        return list(replay.replay_events(session.history)), warning

    async def switch_model(self, provider: str, model: str) -> None:
        """Use ``provider``/``model``: the same provider switches in place, another reopens
        the session with it."""
        if provider == self.provider:
            models.switch_model(self.settings, self.session, model)
            self.options = dataclasses.replace(self.options, model=model)
            return
        await self._reopen(dataclasses.replace(self.options, provider=provider, model=model))

    async def use_agent(self, name: str) -> None:
        await self._reopen(dataclasses.replace(self.options, agent=name))

    async def activate_skill(self, name: str) -> None:
        if name not in self.skill_names():
            raise ConfigError(f"there is no skill named {name!r}", hint="see :skills")
        await self._reopen(dataclasses.replace(self.options, skills=(*self.options.skills, name)))

    async def _reopen(self, options: SessionOptions) -> None:
        """Close the session and resume it with ``options`` (a new one if it is not stored or
        was empty), in the approval mode it had."""
        mode = policy.approval_mode(self.session.agent.gate)
        resume = await self.close()  # None when it was empty: a new one then
        self.options = dataclasses.replace(options, resume=resume, continue_latest=False)
        await self.open()
        if mode is not None:
            policy.set_approval_mode(self.session.agent.gate, mode)

    def approval_mode(self) -> str | None:
        """The session's approval mode now (ask, edits, auto or deny); None when it has none."""
        return policy.approval_mode(self.session.agent.gate)

    def next_approval_mode(self) -> str | None:
        """Switch the session to the next approval mode (ask, edits, auto, deny, then ask) for
        the rest of the session; the new mode, or None when the session has no mode."""
        return policy.next_approval_mode(self.session.agent.gate)

    def prompt(self, text: str) -> PromptRun:
        """The typed ``text`` as a prompt: ``@path`` mentions attached (deny-read applies), a
        ``/template`` command expanded (a template's own ``@`` words are never attached) and a
        ``/skill`` command expanded."""
        attacher = attach.Attacher(self.settings.work_dir, self.policy)
        expand = self.prompt_commands.expand_text
        prompt = prompt_commands.compose(text, attacher, lambda typed: expand(typed))
        return self.session.prompt(Message.user(prompt))

    def record(self, session_id: str) -> SessionRecord:
        """The stored session ``session_id`` (an id or unique prefix)."""
        store = open_store(self.settings.data_dir, self.settings.store_url)
        try:
            return store.get(session_id)
        finally:
            store.close()
