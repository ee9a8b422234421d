"""How sessions confine the shell: ``shell_sandbox`` / ``shell_network`` from config (never from
an untrusted project), the hidden paths, the one-time notice, and ``.env`` secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.api import Runtime
from openheim.config.load import Settings, load_settings
from openheim.config.trust import set_trust
from openheim.redaction.secrets import REDACTED, redact
from openheim.tools import shell_sandbox
from openheim.tools.shell_sandbox import ShellSandbox
from tests.api.conftest import MODEL, Scripted


def settings_in(home: Path, work: Path, user: str, project: str | None = None) -> Settings:
    (home / "config.toml").write_text(user)
    if project is not None:
        (work / ".openheim").mkdir()
        (work / ".openheim" / "config.toml").write_text(project)
    return load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})


async def sandbox_of(settings: Settings, scripted: Scripted) -> ShellSandbox:
    return (await opened(settings, scripted))[0]


async def opened(settings: Settings, scripted: Scripted) -> tuple[ShellSandbox, list[str]]:
    """The shell sandbox of a session opened with ``settings``, and its notices."""
    runtime = Runtime(settings=settings, provider=scripted.kind, model=MODEL)
    async with runtime.open_session() as session:
        box = session.agent.context.shell_sandbox
        notices = [n.message for n in session.notices]
    await runtime.aclose()
    return box, notices


async def test_the_session_confines_the_shell_as_configured(
    scripted: Scripted, home: Path, work: Path
) -> None:
    settings = settings_in(home, work, "allow_shell = true\nshell_network = true\n")
    box = await sandbox_of(settings, scripted)
    assert (box.mode, box.network) == ("auto", True)
    assert home.resolve() / "config.toml" in box.hidden
    assert Path("~/.ssh").expanduser().resolve() in box.hidden
    assert Path("~/.aws/credentials").expanduser().resolve() in box.hidden
    off = settings_in(home, work, 'shell_sandbox = "off"\n')
    assert (await sandbox_of(off, scripted)).mode == "off"


@pytest.mark.parametrize("trusted", [False, True])
def test_an_untrusted_project_cannot_loosen_the_sandbox(
    home: Path, work: Path, trusted: bool
) -> None:
    project = 'shell_network = true\nshell_sandbox = "off"\n'
    if trusted:
        (work / ".openheim").mkdir()
        (work / ".openheim" / "config.toml").write_text(project)
        assert set_trust(work, home)
        settings = load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})
    else:
        settings = settings_in(home, work, "", project)
    assert (settings.shell_network, settings.shell_sandbox) == (
        (True, "off") if trusted else (False, "auto")
    )
    said = [n.message for n in settings.notices]
    ignored = [n for n in said if "shell_network" in n or "shell_sandbox" in n]
    assert len(ignored) == (0 if trusted else 2)


async def test_a_missing_sandbox_is_noticed_once_when_the_shell_is_offered(
    scripted: Scripted, home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell_sandbox, "unavailable", lambda: "bwrap fails here: no userns")
    monkeypatch.setattr(shell_sandbox, "_noticed", set())
    _, notices = await opened(settings_in(home, work, ""), scripted)
    assert not any("unconfined" in n for n in notices)
    said = []
    for _ in range(2):
        _, notices = await opened(settings_in(home, work, "allow_shell = true\n"), scripted)
        said.append([n for n in notices if n.startswith("shell commands run unconfined")])
    assert [len(lines) for lines in said] == [1, 0]  # once per process
    assert "bwrap fails here: no userns" in said[0][0] and "bubblewrap" in said[0][0]


async def test_env_file_secrets_are_registered_when_a_session_opens(
    scripted: Scripted, home: Path, work: Path
) -> None:
    password = "plain-words-as-a-password-7"
    (work / ".env.local").write_text(f"SMTP_PASSWORD={password}\n")
    assert redact(password) == password
    await sandbox_of(settings_in(home, work, ""), scripted)
    assert redact(f"x {password} y") == f"x {REDACTED} y"
