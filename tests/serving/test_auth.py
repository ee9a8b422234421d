"""The token of ``openheim serve`` kept in the data dir: reused at the next start, replaced on
request (``new_token``) or when the kept file is not a private regular file of the user."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from openheim.config.load import Settings, load_settings
from openheim.errors import ConfigError
from openheim.serving.auth import TOKEN_ENV, TOKEN_FILE, load_auth

KEPT = "kept-token-0123456789abcdef"


def settings_of(home: Path) -> Settings:
    return load_settings(env={"OPENHEIM_HOME": str(home)})


def keep(home: Path, text: str = KEPT, mode: int = 0o600) -> Path:
    path = home / TOKEN_FILE
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_generated_token_is_kept_privately_and_reused(home: Path) -> None:
    first = load_auth(settings_of(home), public=False, env={})
    second = load_auth(settings_of(home), public=False, env={})
    path = home / TOKEN_FILE
    assert first.generated and not second.generated
    assert second.token == first.token == path.read_text()
    assert second.cookie_value == first.cookie_value  # a browser stays logged in
    assert second.kept_in == path and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_new_token_replaces_the_kept_one(home: Path) -> None:
    old = load_auth(settings_of(home), public=False, env={})
    new = load_auth(settings_of(home), public=False, new_token=True, env={})
    assert new.generated and new.token != old.token
    assert new.cookie_value != old.cookie_value  # old cookies are refused
    assert (home / TOKEN_FILE).read_text() == new.token
    assert stat.S_IMODE((home / TOKEN_FILE).stat().st_mode) == 0o600


def _symlink(home: Path) -> None:
    other = home / "elsewhere"
    other.write_text(KEPT)
    other.chmod(0o600)
    (home / TOKEN_FILE).symlink_to(other)


def _hard_link(home: Path) -> None:
    os.link(keep(home), home / "second-name")


def _fifo(home: Path) -> None:
    os.mkfifo(home / TOKEN_FILE, 0o600)


def _folder(home: Path) -> None:
    (home / TOKEN_FILE).mkdir()


UNFIT: dict[str, Callable[[Path], object]] = {
    "readable by the group": lambda home: keep(home, mode=0o640),
    "readable by all": lambda home: keep(home, mode=0o644),
    "too short": lambda home: keep(home, "short"),
    "holds a space": lambda home: keep(home, "kept token 0123456789abcdef"),
    "not UTF-8": lambda home: (home / TOKEN_FILE).write_bytes(b"\xff" * 20),
    "a symlink": _symlink,
    "a hard link": _hard_link,
    "a FIFO": _fifo,
}


@pytest.mark.parametrize("make", UNFIT.values(), ids=UNFIT.keys())
def test_an_unfit_kept_file_gets_a_new_token(home: Path, make: Callable[[Path], object]) -> None:
    make(home)
    auth = load_auth(settings_of(home), public=False, env={})
    path = home / TOKEN_FILE
    assert auth.generated and auth.token != KEPT
    assert not path.is_symlink() and path.read_text() == auth.token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_folder_in_its_place_is_a_clear_error(home: Path) -> None:
    _folder(home)
    with pytest.raises(ConfigError, match=f"cannot keep the server's token in {home}"):
        load_auth(settings_of(home), public=False, env={})


def test_a_new_token_with_a_given_token_is_refused(home: Path) -> None:
    with pytest.raises(ConfigError, match="--new-token replaces the token kept"):
        load_auth(settings_of(home), public=False, new_token=True, env={TOKEN_ENV: KEPT})
    assert not (home / TOKEN_FILE).exists()


def test_a_public_address_refuses_the_kept_token(home: Path) -> None:
    keep(home)
    with pytest.raises(ConfigError, match="needs an explicit token"):
        load_auth(settings_of(home), public=True, env={})
