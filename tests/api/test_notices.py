"""Notices as events of the session they concern: the first prompt starts with
``SessionStarted`` and the session's notices; the settings are never changed by a session."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.config.load import Settings, load_settings
from openheim.events import Event, IterationStart, Notice, SessionStarted
from openheim.runtime import SessionOptions
from openheim.tools import shell_sandbox
from tests.api.conftest import MODEL, Scripted


def project_settings(home: Path, work: Path, user: str = "", project: str = "") -> Settings:
    """Settings loaded as ``openheim run`` loads them, from a user config and an untrusted
    project config; ``system.md`` exists, so the prompt has nothing to say."""
    (home / "system.md").write_text("You are a test agent.\n")
    (home / "config.toml").write_text(user)
    (work / ".openheim").mkdir(exist_ok=True)
    (work / ".openheim" / "config.toml").write_text(project)
    return load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})


def notices(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in events if isinstance(e, Notice)]


BROKEN_MCP = '[mcp_servers.broken]\ncommand = "/nonexistent/openheim-test-server"\n'
WIDENING = "max_iterations = 500\n"


async def test_the_first_prompt_starts_with_the_session_and_its_notices(
    scripted: Scripted, home: Path, work: Path
) -> None:
    settings = project_settings(home, work, BROKEN_MCP, WIDENING)
    scripted.provider.add("one", "two")
    async with (
        Runtime(settings=settings, provider=scripted.kind, model=MODEL) as runtime,
        await runtime.new_session() as session,
    ):
        first = (await session.prompt("hi")).events
        second = (await session.prompt("again")).events
    started = first[0]
    assert isinstance(started, SessionStarted)
    assert (started.session_id, started.provider, started.model) == (
        session.id,
        scripted.kind,
        MODEL,
    )
    assert (started.cwd, started.messages, started.resumed) == (str(work), 0, False)
    said = notices(first)
    assert [kind for kind, _ in said] == ["trust", "mcp"]
    assert "ignored max_iterations" in said[0][1] and "openheim trust" in said[0][1]
    assert "MCP server 'broken' is unavailable" in said[1][1]
    assert isinstance(first[len(said) + 1], IterationStart)  # the news first, then the run
    assert session.notices == tuple(e for e in first if isinstance(e, Notice))
    assert not any(isinstance(e, Notice | SessionStarted) for e in second)


async def test_a_resumed_session_says_so(scripted: Scripted, home: Path, work: Path) -> None:
    settings = project_settings(home, work)
    scripted.provider.add("one", "two")
    async with Runtime(settings=settings, provider=scripted.kind, model=MODEL) as runtime:
        async with await runtime.new_session() as session:
            await session.prompt("hi")
        assert session.id is not None
        async with await runtime.resume_session(session.id) as resumed:
            events = (await resumed.prompt("again")).events
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert (started.session_id, started.messages, started.resumed) == (session.id, 2, True)
    assert notices(events) == []


async def test_opening_sessions_never_changes_the_settings(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every source of session notices at once: each session gets them, the settings stay as
    loaded, and one session's notices are not another's."""
    monkeypatch.setattr(shell_sandbox, "unavailable", lambda: "no user namespaces here")
    monkeypatch.setattr(shell_sandbox, "_noticed", set())
    (home / "agents").mkdir()
    (home / "agents" / "rev.md").write_text("---\ndescription: x\nbogus: 1\n---\nYou review.\n")
    (home / "skills").mkdir()
    (home / "skills" / "broken.md").write_text("+++\nname = \n+++\nbody\n")
    (work / ".openheim").mkdir()
    (work / ".openheim" / "permissions.toml").write_text(
        "[rules]\nallow = ['command \"git push\"']\n"
    )
    settings = project_settings(home, work, f"allow_shell = true\n{BROKEN_MCP}", WIDENING)
    runtime = Runtime(settings=settings, provider=scripted.kind, model=MODEL)
    before = copy.deepcopy(runtime.settings)
    kinds: list[list[str]] = []
    async with runtime:
        for options in (SessionOptions(), SessionOptions(persist=False)):
            async with runtime.open_session(options) as session:
                kinds.append(sorted(n.kind for n in session.notices))
        async with await runtime.new_session() as hosted:
            kinds.append(sorted(n.kind for n in hosted.notices))
    assert runtime.settings == before
    assert runtime.settings.notices == before.notices and len(before.notices) == 1
    every = ["agents", "mcp", "permissions", "sandbox", "skills", "trust"]
    assert kinds[0] == every
    later = [k for k in every if k != "sandbox"]  # the sandbox is noticed once per process
    assert kinds[1:] == [later, later]


async def test_closing_a_session_of_open_session_refuses_prompts(
    scripted: Scripted, home: Path, work: Path
) -> None:
    scripted.provider.add("one")
    runtime = Runtime(provider=scripted.kind, model=MODEL, data_dir=home, work_dir=work)
    async with runtime.open_session() as session:
        assert (await session.prompt("hi")).text == "one"
        await session.close()
        with pytest.raises(RuntimeError, match="closed"):
            await session.prompt("again")
    async with runtime.open_session() as other:
        pass
    with pytest.raises(RuntimeError, match="closed"):  # its block has ended
        await other.prompt("late")
    assert len(scripted.requests) == 1
