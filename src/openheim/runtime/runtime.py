"""``Runtime``: the library API. It holds the settings, the caller's tools and approval policy,
and opens sessions; ``openheim run`` and ``openheim acp`` drive the same object."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from openheim.approval import Allow, ApprovalGate, ApprovalRequest, Ask, Deny, Resolver
from openheim.config.load import Overrides, Settings, load_settings
from openheim.providers import Factory, register
from openheim.runtime.assembly import open_session
from openheim.runtime.host import host_session
from openheim.runtime.options import SessionOptions
from openheim.runtime.session import Session
from openheim.runtime.settings import Choices, McpServers, apply_choices, mcp_entries
from openheim.runtime.settings import programmatic_settings as _programmatic
from openheim.runtime.shared import Shared
from openheim.store import SessionRecord, open_store
from openheim.tools.base import Tool
from openheim.tools.client_io import ClientIO

ApprovalCallback: TypeAlias = Callable[
    [ApprovalRequest], "bool | Allow | Deny | Awaitable[bool | Allow | Deny]"
]
"""Decides a tool call the policy would ask about: True / ``Allow`` runs it, False / ``Deny``
refuses it (the reason reaches the model). ``request.reasons`` says why it was asked (the
risks found, when there are any)."""


class Runtime:
    """Sessions over one configuration, with the caller's tools and approval policy.

    Build it from keyword arguments alone (``Runtime(provider="openai", model=..., api_key=...)``)
    or from the config files (``Runtime.from_config()``); see docs/library.md.
    """

    def __init__(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        api_base: str | None = None,
        tools: Sequence[Tool] = (),
        work_dir: str | Path | None = None,
        allow_shell: bool | None = None,
        data_dir: str | Path | None = None,
        mcp_servers: McpServers | None = None,
        approval: str | ApprovalCallback | None = None,
        max_iterations: int | None = None,
        save_sessions: bool | None = None,
        settings: Settings | None = None,
    ) -> None:
        mode = approval if isinstance(approval, str) else None
        choices = Choices(
            provider, model, api_key, api_base, work_dir, allow_shell, data_dir,
            mcp_servers, mode, max_iterations, save_sessions,
        )  # fmt: skip
        settings = _programmatic(choices) if settings is None else apply_choices(settings, choices)
        if callable(approval):
            settings = apply_choices(settings, Choices(approval="ask"))
        self.settings = settings
        self.tools: list[Tool] = list(tools)
        self._resolver = _callback_resolver(approval) if callable(approval) else None
        self._sessions: set[Session] = set()
        self.shared = Shared()
        """What this runtime's sessions use in common (one store connection, HTTP clients)."""

    @classmethod
    def from_config(
        cls,
        *,
        cwd: str | Path | None = None,
        provider: str | None = None,
        model: str | None = None,
        work_dir: str | Path | None = None,
        allow_shell: bool | None = None,
        approval: str | ApprovalCallback | None = None,
        max_iterations: int | None = None,
        tools: Sequence[Tool] = (),
        mcp_servers: McpServers | None = None,
    ) -> Runtime:
        """The configuration ``openheim run`` would use in ``cwd`` (``~/.openheim/config.toml``
        or ``$OPENHEIM_HOME``, the project's ``.openheim/``, ``OPENHEIM_*`` variables), with
        the given arguments laid over it."""
        overrides = Overrides(
            provider=provider,
            model=model,
            max_iterations=max_iterations,
            allow_shell=allow_shell,
            work_dir=str(work_dir) if work_dir is not None else None,
            approval=approval if isinstance(approval, str) else None,
        )
        settings = load_settings(overrides, cwd=Path(cwd) if cwd is not None else None)
        return cls(settings=settings, tools=tools, approval=approval, mcp_servers=mcp_servers)

    @staticmethod
    def register_provider(kind: str, factory: Factory) -> None:
        """Make ``kind`` usable as a provider kind (``Runtime(provider=kind)`` or ``kind = ...``
        in a ``[providers.NAME]`` table); see docs/custom-provider.md."""
        register(kind, factory)

    def add_tool(self, tool: Tool) -> None:
        """Offer ``tool`` (e.g. a ``@tool`` function) in sessions opened from now on."""
        self.tools.append(tool)

    @contextlib.asynccontextmanager
    async def open_session(
        self,
        options: SessionOptions | None = None,
        *,
        resolver: Resolver | None = None,
        gate: ApprovalGate | None = None,
        client: ClientIO | None = None,
    ) -> AsyncIterator[Session]:
        """A session for the caller's own task, open for the ``async with`` block (``openheim
        run`` uses this)."""
        async with open_session(
            self.settings,
            options,
            gate=gate,
            resolver=resolver or self._resolver,
            tools=self.tools,
            client=client,
            shared=self.shared,
        ) as session:
            yield session

    async def new_session(
        self,
        *,
        cwd: str | Path | None = None,
        model: str | None = None,
        skills: Sequence[str] = (),
        mcp_servers: McpServers | None = None,
        resolver: Resolver | None = None,
        client: ClientIO | None = None,
    ) -> Session:
        """A new session; close it with ``close()`` or ``async with``."""
        options = _options(cwd=cwd, model=model, skills=skills, mcp_servers=mcp_servers)
        return await self._host(options, resolver, client)

    async def resume_session(
        self,
        session_id: str,
        *,
        cwd: str | Path | None = None,
        mcp_servers: McpServers | None = None,
        resolver: Resolver | None = None,
        client: ClientIO | None = None,
    ) -> Session:
        """A stored session (by id or unique prefix), with its history, model and skills."""
        options = _options(cwd=cwd, resume=session_id, mcp_servers=mcp_servers)
        return await self._host(options, resolver, client)

    def list_sessions(
        self, *, cwd: str | Path | None = None, limit: int = 50, before: float | None = None
    ) -> list[SessionRecord]:
        """Stored sessions, newest first; pass the last one's ``updated_at`` as ``before``."""
        store = open_store(self.settings.data_dir, self.settings.store_url)
        try:
            folder = str(Path(cwd).resolve()) if cwd is not None else None
            return store.list(cwd=folder, limit=limit, before=before)
        finally:
            store.close()

    async def aclose(self) -> None:
        """Close every session this runtime opened and has not closed yet, then the HTTP
        clients its sessions shared."""
        for session in list(self._sessions):
            await session.close()
        await self.shared.clients.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _host(
        self, options: SessionOptions, resolver: Resolver | None, client: ClientIO | None
    ) -> Session:
        session = await host_session(
            lambda: self.open_session(options, resolver=resolver, client=client)
        )
        self._sessions.add(session)
        session.on_close(self._sessions.discard)
        return session


def _options(
    *,
    cwd: str | Path | None = None,
    model: str | None = None,
    skills: Sequence[str] = (),
    resume: str | None = None,
    mcp_servers: McpServers | None = None,
) -> SessionOptions:
    return SessionOptions(
        resume=resume,
        skills=tuple(skills),
        model=model,
        cwd=Path(cwd) if cwd is not None else None,
        mcp_servers=mcp_entries(mcp_servers or {}),
    )


def _callback_resolver(callback: ApprovalCallback) -> Resolver:
    """A resolver that asks the caller's callback (sync or async)."""

    async def resolve(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        answer: Any = callback(dataclasses.replace(request, reasons=ask.reasons))
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Allow | Deny):
            return answer
        return Allow() if answer else Deny("the approval callback refused this call")

    return resolve
