"""``[hooks]`` in config: event names and Yips' aliases, bad entries refused with a clear error,
and a project's hooks taken only once the project is trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.config.load import Settings, load_settings
from openheim.config.schema import HookEntry
from openheim.config.trust import set_trust
from openheim.errors import ConfigError


def settings_with(tmp_path: Path, user: str, project: str | None = None) -> Settings:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    (home / "config.toml").write_text(user)
    if project is not None:
        (cwd / ".openheim").mkdir()
        (cwd / ".openheim" / "config.toml").write_text(project)
    return load_settings(cwd=cwd, env={"OPENHEIM_HOME": str(home)})


def test_events_and_yips_aliases(tmp_path: Path) -> None:
    s = settings_with(
        tmp_path,
        '[hooks]\n"on-session-start" = "echo start"\n"on-file-write" = "echo wrote"\n'
        'pre_tool = { command = "./check", timeout = 5, required = true }\n',
    )
    assert s.hooks == {
        "session_start": HookEntry("echo start"),
        "file_write": HookEntry("echo wrote"),
        "pre_tool": HookEntry("./check", 5, True),
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('on_start = "x"', "[hooks] has no event 'on_start'"),
        ('"on-session-end" = "x"\nsession_end = "y"', "names the event 'session_end' twice"),
        ('stop = { command = "x", required = true }', "only a pre_tool hook can be required"),
        ('stop = { command = "x", timeout = 500 }', "greater than 0 and at most 120, got 500"),
        ('stop = { command = "x", timeout = 0 }', "must be greater than 0 and at most 120, got 0"),
        ("stop = 3", "hooks.stop: expected a string, got an integer (3) or expected a table"),
    ],
)
def test_bad_entries_are_refused_clearly(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_with(tmp_path, f"[hooks]\n{table}\n")
    assert message in str(err.value)


def test_a_project_hooks_count_only_once_trusted(tmp_path: Path) -> None:
    project = '[hooks]\nuser_prompt = "curl evil"\n'
    untrusted = settings_with(tmp_path, "max_iterations = 5\n", project)
    assert untrusted.hooks == {}
    [notice] = untrusted.notices
    assert notice.message.startswith("ignored hooks from the untrusted project config")
    set_trust(tmp_path / "project", tmp_path / "home", trusted=True)
    env = {"OPENHEIM_HOME": str(tmp_path / "home")}
    trusted = load_settings(cwd=tmp_path / "project", env=env)
    assert trusted.hooks == {"user_prompt": HookEntry("curl evil")}


@pytest.mark.parametrize(
    "project",
    [
        '[hooks]\n"on-session-start" = "curl evil"\n',
        'hooks = { pre_tool = { command = "curl evil", required = false } }\n',
        'hooks.stop.command = "curl evil"\n',
        '[hooks.pre_tool]\ncommand = "curl evil"\ntimeout = 1\n',
        '[hooks]\npre_tool = { command = "./check", timeout = 120 }\n',
    ],
)
def test_no_spelling_of_an_untrusted_project_hooks_reaches_the_user_hooks(
    tmp_path: Path, project: str
) -> None:
    user = '[hooks]\npre_tool = { command = "./check", timeout = 5, required = true }\n'
    settings = settings_with(tmp_path, user, project)
    assert settings.hooks == {"pre_tool": HookEntry("./check", 5, True)}
    assert [n.message.split(" from ")[0] for n in settings.notices] == ["ignored hooks"]
