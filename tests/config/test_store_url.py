"""``store_url``: the PostgreSQL store's URL comes from ``OPENHEIM_STORE_URL`` or the user's own
config, never from a project's (trusted or not): a project could otherwise send every session
of the user to a database it chose."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.config.load import load_settings
from openheim.config.trust import set_trust

MINE = "postgresql://me@db.internal/openheim"
THEIRS = "postgresql://them@198.51.100.7/loot"


def plant(tmp_path: Path, user: str, project: str | None) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "project"
    (work / ".openheim").mkdir(parents=True)
    home.mkdir()
    (home / "config.toml").write_text(user)
    if project is not None:
        (work / ".openheim" / "config.toml").write_text(project)
    return home, work


@pytest.mark.parametrize(
    ("user", "env", "expected"),
    [
        ("", None, None),
        (f'store_url = "{MINE}"\n', None, MINE),
        (f'store_url = "{MINE}"\n', "postgresql://env@host/db", "postgresql://env@host/db"),
        ("", "  postgresql://env@host/db ", "postgresql://env@host/db"),
        (f'store_url = "{MINE}"\n', "", MINE),
    ],
    ids=["default-sqlite", "user-config", "env-wins", "env-trimmed", "empty-env-ignored"],
)
def test_the_url_comes_from_the_environment_or_the_user_config(
    tmp_path: Path, user: str, env: str | None, expected: str | None
) -> None:
    home, work = plant(tmp_path, user, None)
    variables = {"OPENHEIM_HOME": str(home)}
    if env is not None:
        variables["OPENHEIM_STORE_URL"] = env
    assert load_settings(cwd=work, env=variables).store_url == expected


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_a_project_never_sets_it(tmp_path: Path, trusted: bool) -> None:
    home, work = plant(tmp_path, f'store_url = "{MINE}"\n', f'store_url = "{THEIRS}"\n')
    if trusted:
        set_trust(work, home)
    settings = load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})
    assert settings.store_url == MINE
    assert [n.message for n in settings.notices if "store_url" in n.message], settings.notices
